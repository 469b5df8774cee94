package ebpf_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
)

// deadline bounds every wait for the kernel; the tests poll or select, never sleep.
const deadline = 30 * time.Second

// openProbe loads the programs and runs the ring-buffer reader for the test.
func openProbe(t *testing.T) *ebpf.Probe {
	t.Helper()
	p := ebpf.Open()
	st := p.Status()
	t.Logf("eBPF: %s", st)
	for _, pr := range st.Programs {
		if pr.Err != "" {
			t.Logf("  %s %s: %s", pr.Signal, pr.Hook, pr.Err)
		}
	}
	if st.Reason != "" {
		p.Close()
		t.Fatalf("eBPF did not load as root: %s", st.Reason)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		p.Close()
	})
	return p
}

func TestOOMKillReportsVictimAndCgroup(t *testing.T) {
	requireRoot(t)
	p := openProbe(t)
	if !p.Status().OOMAvailable() {
		t.Fatalf("no OOM program loaded: %s", p.Status())
	}
	cg := newMemcg(t, 32<<20)
	id := cg.id(t)
	cmd := cg.start(t, "hog")
	pid := uint32(cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	timeout := time.After(deadline)
	for {
		select {
		case k := <-p.Events():
			if k.PID != pid {
				t.Logf("another OOM kill on the host: pid %d %q memcg %d", k.PID, k.Comm, k.MemcgID)
				continue
			}
			latency := time.Since(k.At)
			t.Logf("OOM kill via %s: pid %d comm %q memcg %d (dir inode %d) limit memcg %d cgroup %d anon %d B file %d B; kernel → agent %v",
				k.Hook, k.PID, k.Comm, k.MemcgID, id, k.LimitMemcgID, k.CgroupID, k.AnonBytes, k.FileBytes, latency)
			if k.MemcgID != id {
				t.Errorf("memcg id = %d, want the inode of %s = %d", k.MemcgID, cg.dir, id)
			}
			if k.LimitMemcgID != id {
				t.Errorf("limit memcg id = %d, want %d (the hog's own 32 MiB limit was hit)", k.LimitMemcgID, id)
			}
			if k.AnonBytes < 16<<20 {
				t.Errorf("anon RSS at the kill = %d B, want most of the 32 MiB limit", k.AnonBytes)
			}
			err := <-exited
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Errorf("hog exit = %v, want killed by SIGKILL", err)
			}
			return
		case err := <-exited:
			t.Fatalf("hog exited (%v) before its kill was reported", err)
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatalf("no OOM kill of pid %d within %v", pid, deadline)
		}
	}
}

func TestReclaimStallPerCgroup(t *testing.T) {
	requireRoot(t)
	p := openProbe(t)
	if !p.Status().StallAvailable() {
		t.Fatalf("reclaim programs not loaded: %s", p.Status())
	}
	busy := newMemcg(t, 16<<20)
	idle := newMemcg(t, 16<<20)
	// The idle cgroup holds a process that allocates nothing.
	sleeper := exec.Command("/bin/sh", "-c", `echo $$ > "$1" && exec sleep 600`, "sh", idle.procs)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })

	file := filepath.Join(t.TempDir(), "pagecache")
	w := busy.start(t, "write", file)
	if err := w.Wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	s, ok, err := p.Stall(busy.id(t))
	if err != nil || !ok {
		t.Fatalf("no stall for the writer's cgroup %d: ok=%v err=%v", busy.id(t), ok, err)
	}
	t.Logf("writer's cgroup: %d reclaim passes, %v total, %v max, %d pages reclaimed",
		s.Count, time.Duration(s.TotalNs), time.Duration(s.MaxNs), s.ReclaimedPages)
	if s.Count == 0 || s.TotalNs == 0 || s.ReclaimedPages == 0 {
		t.Errorf("stall = %+v, want non-zero count, time and reclaimed pages", s)
	}
	if s, ok, err := p.Stall(idle.id(t)); err != nil || (ok && s.TotalNs != 0) {
		t.Errorf("idle cgroup stall = %+v ok=%v err=%v, want none", s, ok, err)
	}
}
