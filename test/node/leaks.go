package node

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

const cgroupFS = "/sys/fs/cgroup"

// kubepodsDirs lists the kubelet's top-level cgroup in every hierarchy (cgroup v1
// controllers and the v2 mount), whichever exist, and the cgroup roots the multi-node
// tier made for its further kubelets (multinode.go).
func kubepodsDirs() []string {
	var out []string
	for _, pattern := range []string{cgroupFS + "/kubepods", cgroupFS + "/*/kubepods", cgroupFS + "/*/kubepods.slice",
		cgroupFS + "/*/" + cgroupRootPrefix + "*"} {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}

// removeKubepods removes every kubepods cgroup tree, deepest first, retrying for up to
// within while the last processes of a torn-down pod are being reaped. A cgroup that
// still has processes cannot be removed (EBUSY) and is reported.
func removeKubepods(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var failed []string
		for _, root := range kubepodsDirs() {
			var dirs []string
			_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
					failed = append(failed, fmt.Sprintf("%s: %v", dirs[i], err))
				}
			}
		}
		if len(failed) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s", strings.Join(failed, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hostLinks lists the network interfaces of the host's network namespace.
func hostLinks() []string {
	entries, _ := os.ReadDir("/sys/class/net")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// checkTeardown returns what the tier left on the host: processes of its PID namespace,
// mounts under its folder or of its runtime paths, new network links, kubepods cgroups.
func checkTeardown(dir, pidNS string, linksBefore []string) []string {
	var leaks []string
	if err := removeKubepods(15 * time.Second); err != nil {
		leaks = append(leaks, "cgroups: "+err.Error())
	}
	if d := kubepodsDirs(); len(d) > 0 {
		leaks = append(leaks, "cgroups: "+strings.Join(d, ", "))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		ns, err := os.Readlink(p + "/ns/pid")
		cmdline, _ := os.ReadFile(p + "/cmdline")
		cl := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if (err == nil && pidNS != "" && ns == pidNS) || strings.Contains(cl, dir) {
			leaks = append(leaks, fmt.Sprintf("process %s: %s", filepath.Base(p), cl))
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, dir) || strings.Contains(line, " /run/containerd") || strings.Contains(line, " /run/netns") {
			leaks = append(leaks, "mount: "+line)
		}
	}
	had := map[string]bool{}
	for _, l := range linksBefore {
		had[l] = true
	}
	for _, l := range hostLinks() {
		if !had[l] {
			leaks = append(leaks, "network link: "+l)
		}
	}
	return leaks
}

// kubeletSysctls are the host-wide kernel settings the kubelet sets at start
// (pkg/kubelet/cm setupKernelTunables, protectKernelDefaults false). They are not
// namespaced, so the tier saves them before and restores them after.
var kubeletSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

func saveSysctls() map[string]string {
	out := map[string]string{}
	for _, k := range kubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			out[k] = strings.TrimSpace(string(b))
		}
	}
	return out
}

// restoreSysctls writes the saved values back and returns those that still differ.
func restoreSysctls(saved map[string]string) []string {
	var leaks []string
	for k, v := range saved {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err == nil && strings.TrimSpace(string(b)) == v {
			continue
		}
		if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
			leaks = append(leaks, fmt.Sprintf("sysctl %s: restoring %s: %v", k, v, err))
		}
	}
	return leaks
}
