package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
	"github.com/ballastk8s/ballast/pkg/series"
)

func psiSome(totalUsec uint64) *cgroup.PSI {
	return &cgroup.PSI{Some: cgroup.PSILine{TotalUsec: totalUsec}}
}

// The PSI "some" total's change over the interval becomes stall µs per second: nothing on
// the first cycle or after a reset, a reading at or above the 1 % floor, a count below it,
// nothing to write for a pod not yet bound.
func TestPSIPressure(t *testing.T) {
	a := testAgent(t, "cgroupv1-cgroupfs")
	cs := &ctrState{name: "app"}
	t0 := time.Unix(1_800_000_000, 0)
	step := func(total uint64, at time.Time, hash string) *pressureItem {
		a.st.mu.Lock()
		defer a.st.mu.Unlock()
		return a.psiPressureLocked(&discovery.Pod{Namespace: "shop", Name: "web-1", Hash: hash}, cs, psiSome(total), at)
	}
	if it := step(5_000_000, t0, "0123456789abcdef"); it != nil {
		t.Fatalf("first cycle: %+v, want no reading (no previous total)", it)
	}
	// 1.5 s stalled in 10 s: 150,000 µs/s.
	it := step(6_500_000, t0.Add(10*time.Second), "0123456789abcdef")
	want := &pressureItem{hash: "0123456789abcdef", r: series.PressureReading{Container: "app", Pod: "shop/web-1", Node: "node-1",
		At: t0.Add(10 * time.Second), Interval: 10 * time.Second, StallPerSec: 150_000, Source: series.PressureSourcePSI}}
	if diff := cmp.Diff(want, it, cmp.AllowUnexported(pressureItem{})); diff != "" {
		t.Errorf("reading (-want +got):\n%s", diff)
	}
	// 50 ms in 10 s = 0.5 %: below the floor, counted, not written.
	if it := step(6_550_000, t0.Add(20*time.Second), "0123456789abcdef"); it != nil {
		t.Errorf("below the floor: %+v", it)
	}
	if n := testutil.ToFloat64(a.m.pressure[[2]string{"psi", pressureBelowFloor}]); n != 1 {
		t.Errorf("below_floor = %v, want 1", n)
	}
	if !cs.hasPressure || cs.pressure.StallPerSec != 5_000 {
		t.Errorf("last reading for the debug view %+v, want 5000 µs/s", cs.pressure)
	}
	// The total went backwards (the cgroup was re-created): no reading, the next one counts again.
	if it := step(10, t0.Add(30*time.Second), "0123456789abcdef"); it != nil {
		t.Errorf("after a reset: %+v", it)
	}
	if it := step(2_000_010, t0.Add(40*time.Second), ""); it != nil {
		t.Errorf("unbound pod: %+v, want nothing to write", it)
	}
	if n := testutil.ToFloat64(a.m.pressure[[2]string{"psi", pressureUnbound}]); n != 1 {
		t.Errorf("unbound = %v, want 1", n)
	}
	a.st.mu.Lock()
	if it := a.psiPressureLocked(&discovery.Pod{Namespace: "shop", Name: "web-1", Hash: "0123456789abcdef"}, cs, nil, t0.Add(50*time.Second)); it != nil {
		t.Errorf("no PSI file: %+v", it)
	}
	a.st.mu.Unlock()
}

// On a node without PSI the reclaim stall is the pressure; where PSI exists it wins.
func TestStallPressure(t *testing.T) {
	a := testAgent(t, "cgroupv1-cgroupfs")
	cs := &ctrState{name: "app"}
	now := time.Unix(1_800_000_000, 0)
	rd := ebpf.StallReading{Interval: 2 * time.Second, Stalled: 3 * time.Second} // three threads: capped
	pod := &discovery.Pod{Namespace: "shop", Name: "web-1", Hash: "0123456789abcdef"}
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	it := a.stallPressureLocked(pod, cs, rd, now)
	if it == nil || it.r.StallPerSec != series.StallScale || it.r.Source != series.PressureSourceEBPF || it.r.Interval != 2*time.Second {
		t.Fatalf("v1 stall reading %+v, want a capped ebpf reading over 2s", it)
	}
	if it := a.stallPressureLocked(pod, cs, ebpf.StallReading{}, now); it != nil {
		t.Errorf("first stall reading (no interval): %+v", it)
	}
	cs.hasPSI = true
	if it := a.stallPressureLocked(pod, cs, rd, now); it != nil {
		t.Errorf("with PSI the stall is not written: %+v", it)
	}
}

// A write that fails (nothing listens) drops the readings and counts them.
func TestWritePressureFailureCounted(t *testing.T) {
	a := testAgent(t, "cgroupv1-cgroupfs")
	r := series.PressureReading{Container: "app", Pod: "shop/web-1", At: time.Unix(1_800_000_000, 0), Interval: time.Second,
		StallPerSec: 200_000, Source: series.PressureSourceEBPF}
	a.writePressure(context.Background(), []pressureItem{{hash: "0123456789abcdef", r: r}, {hash: "0123456789abcdef", r: r}})
	if n := testutil.ToFloat64(a.m.pressure[[2]string{"ebpf", pressureFailed}]); n != 2 {
		t.Errorf("failed = %v, want 2", n)
	}
	if n := testutil.ToFloat64(a.m.pressure[[2]string{"ebpf", pressureWritten}]); n != 0 {
		t.Errorf("written = %v, want 0", n)
	}
}

// ballast_node_ebpf_lost_events_total is the probe's kernel-side drop count, 0 without one.
func TestEBPFLostEventsMetric(t *testing.T) {
	a := testAgent(t, "cgroupv1-cgroupfs")
	s := newEBPFSource(a) // the metrics are the eBPF source's, registered with or without --ebpf
	const name = "ballast_node_ebpf_lost_events_total"
	expo := func(v string) string {
		return "# HELP " + name + " OOM records dropped by the eBPF programs because the ring buffer was full (the kill is still counted from the cgroup files).\n" +
			"# TYPE " + name + " counter\n" + name + " " + v + "\n"
	}
	if err := testutil.GatherAndCompare(a.reg, strings.NewReader(expo("0")), name); err != nil {
		t.Error(err)
	}
	lost := uint64(0)
	f := func() uint64 { lost += 7; return lost }
	s.lost.Store(&f)
	if err := testutil.GatherAndCompare(a.reg, strings.NewReader(expo("7")), name); err != nil {
		t.Error(err)
	}
	if err := testutil.GatherAndCompare(a.reg, strings.NewReader(expo("14")), name); err != nil {
		t.Error(err)
	}
}
