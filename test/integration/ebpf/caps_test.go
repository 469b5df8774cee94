package ebpf_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
)

// probeChild is the "probe" helper: it opens the probe with the privileges it has, prints
// one status line, and (given a memcg id) prints the first OOM kill in that cgroup.
func probeChild() {
	var o ebpf.Options
	if d := os.Getenv("BALLAST_EBPF_DISABLE"); d != "" {
		o.Disable = strings.Split(d, ",")
	}
	p := ebpf.OpenWith(o)
	defer p.Close()
	st := p.Status()
	fmt.Printf("loaded=%d uid=%d reason=%q status=%q\n", st.Loaded(), os.Getuid(), st.Reason, st.String())
	if len(os.Args) < 2 || st.Loaded() == 0 {
		return
	}
	want, _ := strconv.ParseUint(os.Args[len(os.Args)-1], 10, 64)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	go func() { _ = p.Run(ctx) }()
	for k := range p.Events() {
		if k.MemcgID == want {
			fmt.Printf("kill pid=%d memcg=%d\n", k.PID, k.MemcgID)
			fmt.Fprintf(os.Stderr, "kill via %s: comm %q anon %d B\n", k.Hook, k.Comm, k.AnonBytes)
			return
		}
	}
}

// privileged runs the probe helper through setpriv as nobody with exactly caps.
func privileged(t *testing.T, caps string, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	// nobody must be able to execute the binary: copy it into a world-readable directory.
	self, _ := os.Executable()
	dir, err := os.MkdirTemp("", "ballast-ebpf-caps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "probe")
	copyFile(t, self, bin)
	spec := "-all"
	if caps != "" {
		spec += "," + caps
	}
	argv := []string{"--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=" + spec, "--ambient-caps=" + spec, "--bounding-set=" + spec, "--", bin}
	cmd := exec.Command(setpriv, append(argv, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=probe")
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("probe helper: %v (got %q)", err, line)
	}
	return strings.TrimSpace(line)
}

// CAP_BPF + CAP_PERFMON as a non-root user: every program loads and an OOM kill is seen.
func TestBPFAndPerfmonSuffice(t *testing.T) {
	requireRoot(t)
	cg := newMemcg(t, 32<<20)
	id := cg.id(t)
	_, out := privileged(t, "+bpf,+perfmon", strconv.FormatUint(id, 10))
	st := readLine(t, out)
	t.Log(st)
	if !strings.HasPrefix(st, "loaded=3 uid=65534 ") {
		t.Fatalf("with CAP_BPF+CAP_PERFMON as uid 65534: %s, want 3 programs loaded", st)
	}
	hog := cg.start(t, "hog")
	defer func() { _ = hog.Wait() }()
	if got, want := readLine(t, out), fmt.Sprintf("kill pid=%d memcg=%d", hog.Process.Pid, id); got != want {
		t.Errorf("unprivileged probe saw %q, want %q", got, want)
	}
}

// No capabilities: nothing loads, the reason names the missing capabilities, no crash.
func TestNoCapabilitiesDegrades(t *testing.T) {
	requireRoot(t)
	cmd, out := privileged(t, "")
	st := readLine(t, out)
	t.Log(st)
	if !strings.HasPrefix(st, "loaded=0 uid=65534 ") || !strings.Contains(st, "CAP_BPF") {
		t.Errorf("without capabilities: %s, want 0 loaded and a reason naming CAP_BPF", st)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("probe helper without capabilities: %v, want a clean exit", err)
		}
	case <-time.After(deadline):
		t.Fatal("probe helper without capabilities did not exit")
	}
}

// With the BTF-enabled tracepoints disabled, every signal falls back on its own to the
// classic tracepoint (tracefs mounted in the helper's private mount namespace) and still
// sees the kill.
func TestClassicTracepointFallback(t *testing.T) {
	requireRoot(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	cg := newMemcg(t, 32<<20)
	id := cg.id(t)
	self, _ := os.Executable()
	cmd := exec.Command(unshare, "-m", "--propagation", "private", "/bin/sh", "-c",
		`mount -t tracefs tracefs /sys/kernel/tracing && exec "$0" "$@"`, self, strconv.FormatUint(id, 10))
	cmd.Env = append(os.Environ(), helperEnv+"=probe", "BALLAST_EBPF_DISABLE=btf_mark_victim,btf_reclaim_begin,btf_reclaim_end")
	cmd.Stderr = os.Stderr
	pipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := bufio.NewReader(pipe)
	st := readLine(t, out)
	t.Log(st)
	want := "oom=tracepoint/oom/mark_victim; reclaim_begin=tracepoint/vmscan/mm_vmscan_memcg_reclaim_begin; reclaim_end=tracepoint/vmscan/mm_vmscan_memcg_reclaim_end"
	if !strings.HasPrefix(st, "loaded=3 ") || !strings.Contains(st, want) {
		t.Fatalf("fallback status %s, want 3 classic tracepoints (%s)", st, want)
	}
	hog := cg.start(t, "hog")
	defer func() { _ = hog.Wait() }()
	if got, want := readLine(t, out), fmt.Sprintf("kill pid=%d memcg=%d", hog.Process.Pid, id); got != want {
		t.Errorf("classic tracepoint saw %q, want %q", got, want)
	}
}
