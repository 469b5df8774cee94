// Package cgroupv2 runs the agent's cgroup v2 reader and OOM watcher against a real cgroup
// v2 hierarchy with the memory controller: in the QEMU tier (test/integration/qemu), or on
// any root host that has one. It skips elsewhere (this machine kind binds memory to v1).
package cgroupv2

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/oom"
	"github.com/ballastk8s/ballast/pkg/series"
)

const helperEnv = "BALLAST_CGV2_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "alloc": // hold 24 MiB until stdin closes
		b := make([]byte, 24<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = b[len(b)-1]
	case "hog":
		var keep [][]byte
		for {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
	}
	os.Exit(0)
}

const root = "/sys/fs/cgroup"

// podAndContainer makes <root>/<pod>/<ctr> with the memory controller enabled for ctr and
// the given container limit.
func podAndContainer(t *testing.T, limit int64) (podDir, ctrDir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctl, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
	if err != nil || !strings.Contains(string(ctl), "memory") {
		t.Skip("no cgroup v2 hierarchy with the memory controller at /sys/fs/cgroup (run the QEMU tier, test/integration/qemu)")
	}
	podDir = fmt.Sprintf("ballast-pod-%d-%s", os.Getpid(), t.Name())
	ctrDir = podDir + "/ctr"
	for _, d := range []string{podDir, ctrDir} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Join(root, ctrDir)); _ = os.Remove(filepath.Join(root, podDir)) })
	w := func(d, f, v string) {
		if err := os.WriteFile(filepath.Join(root, d, f), []byte(v), 0o644); err != nil {
			t.Fatalf("%s/%s: %v", d, f, err)
		}
	}
	w(podDir, "cgroup.subtree_control", "+memory +cpu")
	w(ctrDir, "memory.max", strconv.FormatInt(limit, 10))
	w(ctrDir, "memory.swap.max", "0")
	return podDir, ctrDir
}

func startIn(t *testing.T, dir, mode string) (*exec.Cmd, *bufio.Reader, func()) {
	t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$0" && exec "$1"`, filepath.Join(root, dir, "cgroup.procs"), self)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(out), func() { _ = in.Close() }
}

// cpu.stat, the working set, memory.max, PSI, and memory.peak reset per file descriptor.
func TestReaderOnRealCgroupV2(t *testing.T) {
	_, ctr := podAndContainer(t, 64<<20)
	r, err := cgroup.Open(root, cgroup.Options{Version: cgroup.V2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	loc, err := r.Cgroup("/" + ctr)
	if err != nil {
		t.Fatal(err)
	}
	peak, err := r.OpenPeak(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer peak.Close()
	t.Logf("peak mode %s", peak.Mode())
	if peak.Mode() != cgroup.PeakPerFD {
		t.Errorf("peak mode %s, want per-FD reset (kernel ≥ 6.12)", peak.Mode())
	}
	_, _ = peak.Take() // start the interval

	cmd, out, release := startIn(t, ctr, "alloc")
	if l, err := out.ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("helper: %q %v", l, err)
	}
	s, err := r.ReadSample(loc, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sample: cpu %d ns, usage %d B, inactive_file %d B, working set %d B, limit %d B, psi %v",
		s.CPU.UsageNanos, s.MemoryUsageBytes, s.InactiveFileBytes, s.WorkingSetBytes, s.MemoryLimitBytes, s.MemoryPressure)
	if !s.HasCPU || s.CPU.UsageNanos == 0 {
		t.Errorf("cpu.stat: %+v", s.CPU)
	}
	if !s.HasMemory || s.WorkingSetBytes < 24<<20 {
		t.Errorf("working set %d B, want ≥ the helper's 24 MiB", s.WorkingSetBytes)
	}
	if !s.HasMemoryLimit || s.MemoryLimitBytes != 64<<20 {
		t.Errorf("limit %d, want 64 MiB", s.MemoryLimitBytes)
	}
	if s.MemoryPressure == nil || s.CPUPressure == nil {
		t.Error("no PSI read (memory.pressure, cpu.pressure)")
	}
	release()
	_ = cmd.Wait()

	p1, err := peak.Take()
	if err != nil || !p1.Exact || p1.Bytes < 24<<20 {
		t.Errorf("interval peak %+v %v, want exact and ≥ 24 MiB", p1, err)
	}
	p2, err := peak.Take()
	if err != nil || !p2.Exact || p2.Bytes >= 24<<20 {
		t.Errorf("next interval's peak %+v %v, want exact and below 24 MiB (the per-FD reset; the lifetime peak stays higher)", p2, err)
	}
	t.Logf("peaks: interval with the helper %d B, the next %d B", p1.Bytes, p2.Bytes)
}

// The memory pressure the node agent writes on cgroup v2 is the change of
// memory.pressure's "some" total over a sampling interval: a container that runs into its
// limit stalls in reclaim before the kill, and that stall shows as stall µs per second.
func TestMemoryPressureOnRealCgroupV2(t *testing.T) {
	_, ctr := podAndContainer(t, 32<<20)
	r, err := cgroup.Open(root, cgroup.Options{Version: cgroup.V2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	loc, err := r.Cgroup("/" + ctr)
	if err != nil {
		t.Fatal(err)
	}
	before, err := r.ReadSample(loc, time.Now())
	if err != nil || before.MemoryPressure == nil {
		t.Fatalf("no memory.pressure before: %v", err)
	}
	t0 := time.Now()
	cmd, _, _ := startIn(t, ctr, "hog")
	_ = cmd.Wait() // the kill
	after, err := r.ReadSample(loc, time.Now())
	if err != nil || after.MemoryPressure == nil {
		t.Fatalf("no memory.pressure after: %v", err)
	}
	d := after.MemoryPressure.Some.TotalUsec - before.MemoryPressure.Some.TotalUsec
	iv := time.Since(t0)
	stall := series.StallPerSecond(time.Duration(d)*time.Microsecond, iv)
	t.Logf("memory.pressure some: +%d µs over %v = %d µs/s (%.2f%%); avg10 %.2f", d, iv.Round(time.Millisecond), stall,
		100*float64(stall)/series.StallScale, after.MemoryPressure.Some.Avg10)
	if d == 0 || stall == 0 {
		t.Errorf("no memory stall recorded for a container that ran into its limit (+%d µs)", d)
	}
}

// memory.events.local watched with inotify reports a container-limit kill.
func TestOOMWatcherOnRealCgroupV2(t *testing.T) {
	_, ctr := podAndContainer(t, 32<<20)
	r, err := cgroup.Open(root, cgroup.Options{Version: cgroup.V2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := oom.NewWatcher(r, oom.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add("ctr", ctr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Run(ctx) }()
	cmd, _, _ := startIn(t, ctr, "hog")
	start := time.Now()
	defer func() { _ = cmd.Wait() }()
	select {
	case e := <-w.Events():
		t.Logf("inotify OOM event after %v: %+v", time.Since(start), e)
		if e.Key != "ctr" || e.Kind != oom.KindContainer || e.Count < 1 {
			t.Errorf("event %+v, want a container kill of ctr", e)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no OOM event from inotify")
	}
}
