package cgroup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
)

// kinds returns each target's error kinds, and fails the test unless every error wraps
// its cause (so callers can still use errors.Is).
func kinds(t *testing.T, errs []source.Error) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range errs {
		if e.Err == nil {
			t.Fatalf("error of %s (%s) has no cause", e.Key, e.Kind)
		}
		out[e.Key] = append(out[e.Key], e.Kind)
	}
	return out
}

func hasErr(errs []source.Error, key string, target error) bool {
	for _, e := range errs {
		if e.Key == key && errors.Is(e.Err, target) {
			return true
		}
	}
	return false
}

func TestCollector(t *testing.T) {
	dir := copyTree(t, "testdata/cgroupfs-v2")
	r := openReader(t, dir, Options{})
	c := NewCollector(r)
	defer c.Close()

	burstable := Target{Key: "b/app", PodUID: uidB, QOS: Burstable, ContainerID: "containerd://" + idB}
	besteffort := Target{Key: "e/app", PodUID: uidE, QOS: BestEffort, ContainerID: "cri-o://" + idE}
	gone := Target{Key: "x/app", PodUID: uidG, QOS: Burstable, ContainerID: "containerd://" + idG}
	bDir := filepath.Join(dir, "kubepods/burstable/pod"+uidB+"/"+idB)
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()

	// Cycle 1: no interval yet, so no rate and no peak; the wrong-QoS target is reported.
	got, errs, err := c.Collect(ctx, t0, []Target{burstable, besteffort, gone})
	if err != nil || !hasErr(errs, gone.Key, ErrNotFound) {
		t.Errorf("cycle 1 errors %+v (%v), want ErrNotFound for %s", errs, err, gone.Key)
	}
	if k := kinds(t, errs); len(k) != 1 || len(k[gone.Key]) != 1 || k[gone.Key][0] != ErrorKindLocate {
		t.Errorf("cycle 1 error kinds %v, want one locate error for %s only", k, gone.Key)
	}
	if len(got) != 2 || got[0].Key != burstable.Key || got[0].HasMilliCPU || got[0].HasPeak {
		t.Fatalf("cycle 1: %+v", got)
	}
	if got[0].Sample.WorkingSetBytes != 40<<20 {
		t.Errorf("working set %d, want 40Mi", got[0].Sample.WorkingSetBytes)
	}

	// Cycle 2, 10 s later: 1.5 s of cpu (150m), the lifetime peak rose (exact).
	write("cpu.stat", "usage_usec 4000000\n")
	write("memory.peak", "70000000\n")
	got, errs, err = c.Collect(ctx, t0.Add(10*time.Second), []Target{burstable})
	if err != nil || len(errs) != 0 {
		t.Fatal(err, errs)
	}
	if len(got) != 1 || !got[0].HasMilliCPU || got[0].MilliCPU != 150 {
		t.Fatalf("cycle 2: %+v", got)
	}
	if !got[0].HasPeak || got[0].Peak != (PeakReading{70000000, true}) {
		t.Errorf("cycle 2 peak %+v", got[0].Peak)
	}

	// Cycle 3: the counter went backwards (cgroup recreated): no rate, a counter_reset error.
	write("cpu.stat", "usage_usec 10\n")
	got, errs, _ = c.Collect(ctx, t0.Add(20*time.Second), []Target{burstable})
	if !hasErr(errs, burstable.Key, ErrCounterReset) || len(got) != 1 || got[0].HasMilliCPU {
		t.Fatalf("cycle 3: %+v, %+v", got, errs)
	}
	if k := kinds(t, errs); len(k[burstable.Key]) != 1 || k[burstable.Key][0] != ErrorKindCounterReset {
		t.Errorf("cycle 3 error kinds %v, want one counter_reset", k)
	}
	// The peak did not move: the interval's peak is the sampled memory.current.
	if got[0].Peak != (PeakReading{50 << 20, false}) {
		t.Errorf("cycle 3 peak %+v", got[0].Peak)
	}
	// Cycle 4: counting resumes from the new baseline (10 µs → 1 s + 10 µs over 10 s).
	write("cpu.stat", "usage_usec 1000010\n")
	got, errs, err = c.Collect(ctx, t0.Add(30*time.Second), []Target{burstable})
	if err != nil || len(errs) != 0 || got[0].MilliCPU != 100 {
		t.Fatalf("cycle 4: %+v, %+v, %v", got, errs, err)
	}

	// The besteffort target left the list in cycle 2: its state is gone.
	if _, ok := c.st[besteffort.Key]; ok {
		t.Error("state of a dropped target kept")
	}

	// A restarted container (new ID) starts over: no rate on its first reading.
	restarted := burstable
	restarted.ContainerID = "containerd://" + idG
	if got, _, _ := c.Collect(ctx, t0.Add(40*time.Second), []Target{restarted}); len(got) != 0 {
		t.Errorf("new container ID should be located afresh (and is not in this tree): %+v", got)
	}
}

func TestCollectorStopsOnCancel(t *testing.T) {
	r := openReader(t, "testdata/cgroupfs-v2", Options{})
	c := NewCollector(r)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, _, err := c.Collect(ctx, t0, []Target{{Key: "b", PodUID: uidB, QOS: Burstable, ContainerID: idB}})
	if len(got) != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("got %+v, %v", got, err)
	}
}

// TestCollectorContainerGone: when the cgroup disappears the target is reported and
// located afresh on the next cycle.
func TestCollectorContainerGone(t *testing.T) {
	dir := copyTree(t, "testdata/cgroupfs-v2")
	r := openReader(t, dir, Options{})
	c := NewCollector(r)
	defer c.Close()
	tg := Target{Key: "b", PodUID: uidB, QOS: Burstable, ContainerID: "containerd://" + idB}
	if _, errs, err := c.Collect(context.Background(), t0, []Target{tg}); err != nil || len(errs) != 0 {
		t.Fatal(err, errs)
	}
	if err := os.RemoveAll(filepath.Join(dir, "kubepods/burstable/pod"+uidB+"/"+idB)); err != nil {
		t.Fatal(err)
	}
	got, errs, _ := c.Collect(context.Background(), t0.Add(time.Second), []Target{tg})
	if len(got) != 0 || !hasErr(errs, tg.Key, os.ErrNotExist) || kinds(t, errs)[tg.Key][0] != ErrorKindRead {
		t.Errorf("got %+v, %+v", got, errs)
	}
	if _, ok := c.st[tg.Key]; ok {
		t.Error("state of a vanished cgroup kept")
	}
	_, errs, _ = c.Collect(context.Background(), t0.Add(2*time.Second), []Target{tg})
	if !hasErr(errs, tg.Key, ErrNotFound) {
		t.Errorf("next cycle: %+v, want ErrNotFound from a fresh locate", errs)
	}
}
