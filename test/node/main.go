// Package node is Ballast's real-node test tier: it starts a one-node Kubernetes 1.37.2
// cluster — etcd, kube-apiserver, kube-scheduler, kube-controller-manager, containerd + runc
// + the CNI bridge plugin from Debian packages, and a real kubelet (cgroupfs driver, cgroup
// v1 allowed) — inside private mount, network and PID namespaces, imports the images
// `make images` builds, and tears everything down again.
//
// The test binary re-executes itself under `unshare -m -n -p -f --propagation private`.
// Inside, it is PID 1 of the namespace: when it ends, the kernel kills every process the
// cluster started (pods included), the veth and bridge vanish with the network namespace,
// and the tmpfs mounts with the mount namespace. Only the kubelet's cgroups live in the
// host's hierarchy; the outer process removes them and then checks that no process,
// mount, network link or cgroup was left behind, failing the package if one was, and puts
// back the host-wide kernel settings the kubelet changes (vm.overcommit_memory, kernel.panic...).
//
// Two stand-ins are named as such: kube-proxy and cluster DNS are replaced by a small
// in-process service proxy and DNS responder (svcproxy.go), because this machine has no
// netfilter tooling; everything else is the real component.
package node

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const innerEnv = "BALLAST_NODE_TIER_DIR"

// skipReason is set when the tier cannot run here (not root, no unshare); Require skips.
var skipReason string

// Require skips t with the reason the tier cannot run on this machine, if any.
func Require(t testing.TB) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// Main runs the package's tests against a real node. Call it from TestMain:
//
//	var n *node.Node
//	func TestMain(m *testing.M) { node.Main(m, &n) }
func Main(m *testing.M, out **Node) { MainWith(m, out, Options{}) }

// MainWith is Main with opts: MainWith(m, &n, node.Options{Nodes: 2}) runs the package's
// tests against the two-node tier (multinode.go).
func MainWith(m *testing.M, out **Node, opts Options) {
	if dir := os.Getenv(innerEnv); dir != "" {
		os.Exit(inner(m, dir, out, opts))
	}
	if os.Geteuid() != 0 {
		skipReason = "real-node tier needs root (it runs a kubelet and containerd in private namespaces)"
	} else if _, err := exec.LookPath("unshare"); err != nil {
		skipReason = "real-node tier needs unshare (util-linux)"
	}
	if skipReason != "" {
		fmt.Println("node tier: skipping:", skipReason)
		os.Exit(m.Run())
	}
	os.Exit(outer())
}

// outer runs on the host: it re-executes the test binary in fresh namespaces, then cleans
// up the cgroups and checks for leftovers.
func outer() int {
	if err := checkPrerequisites(); err != nil {
		fmt.Fprintln(os.Stderr, "node tier:", err)
		return 1
	}
	unlock, err := lockTier()
	if err != nil {
		fmt.Fprintln(os.Stderr, "node tier:", err)
		return 1
	}
	defer unlock()
	if err := removeKubepods(time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "node tier: the host already has kubepods cgroups in use (another kubelet?):", err)
		return 1
	}
	before, sysctls, began := hostLinks(), saveSysctls(), time.Now()
	dir, err := os.MkdirTemp("", "ballast-node-tier-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "node tier:", err)
		return 1
	}
	args := append([]string{"-m", "-n", "-p", "-f", "--kill-child=SIGTERM", "--propagation", "private", "--mount-proc",
		"--", os.Args[0]}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), innerEnv+"="+dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "node tier: unshare:", err)
		return 1
	}
	child, pidNS := innerProcess(cmd.Process.Pid)
	go func() {
		// unshare ignores SIGINT and SIGTERM while it waits: tell the inner binary itself,
		// which tears the node down (and --kill-child covers unshare dying).
		for range sigs {
			if child > 0 {
				_ = syscall.Kill(child, syscall.SIGTERM)
			}
		}
	}()
	code := 0
	if err := cmd.Wait(); err != nil {
		code = 1
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
			code = ee.ExitCode()
		}
	}
	signal.Stop(sigs)
	leaks := append(checkTeardown(dir, pidNS, before), restoreSysctls(sysctls)...)
	if len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "node tier: teardown left things behind (logs kept in %s):\n  %s\n", dir, strings.Join(leaks, "\n  "))
		return 1
	}
	fmt.Printf("node tier: teardown check passed: no process, mount, network link or cgroup left, kernel settings restored (tier %s in all)\n",
		time.Since(began).Round(time.Second))
	if code == 0 || os.Getenv("BALLAST_NODE_TIER_KEEP") == "" {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "node tier: component logs were under %s (set BALLAST_NODE_TIER_KEEP=1 to keep them)\n", dir)
		}
		_ = os.RemoveAll(dir)
	}
	return code
}

// checkPrerequisites fails with how to get whatever the tier needs and is missing.
func checkPrerequisites() error {
	var missing []string
	for _, b := range []string{"containerd", "ctr", "runc", "ip", "mount"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	for _, p := range []string{cniBinDir + "/bridge", cniBinDir + "/host-local", cniBinDir + "/loopback"} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: run hack/install-deps.sh (containerd, runc, containernetworking-plugins, iproute2)",
			strings.Join(missing, ", "))
	}
	for _, t := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubelet", "helm"} {
		if _, err := tool(t); err != nil {
			return err
		}
	}
	return nil
}

// lockTier serialises node-tier runs on this machine: two kubelets would fight over the
// host's kubepods cgroups.
func lockTier() (func(), error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "ballast-node-tier.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// innerProcess returns the PID (as the host sees it) and the PID namespace of unshare's
// child, the inner test binary: signals go to it, and no process of that namespace may
// survive.
func innerProcess(unsharePID int) (int, string) {
	self, _ := os.Readlink("/proc/self/ns/pid")
	for i := 0; i < 250; i++ {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", unsharePID, unsharePID))
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := os.Readlink("/proc/" + f[0] + "/ns/pid"); err == nil && ns != self {
				pid, _ := strconv.Atoi(f[0])
				return pid, ns
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, ""
}
