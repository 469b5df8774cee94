package agent

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/series"
)

func TestImplausible(t *testing.T) {
	node := discovery.Capacity{MilliCPU: 4000, MemoryBytes: 8 << 30, EphemeralStorageBytes: 100 << 30}
	cases := map[string]struct {
		c        discovery.Capacity
		resource string
		v        float64
		want     string
	}{
		"cpu within the cores":              {node, series.ResourceCPU, 4000, ""},
		"cpu rate jitter above the cores":   {node, series.ResourceCPU, 4150, ""},
		"cpu far above the cores":           {node, series.ResourceCPU, 4300, rejectAboveCapacity},
		"memory at capacity":                {node, series.ResourceMemory, 8 << 30, ""},
		"memory one byte above":             {node, series.ResourceMemory, 8<<30 + 1, rejectAboveCapacity},
		"memory 2^64-1 (wrapped counter)":   {node, series.ResourceMemory, math.MaxUint64, rejectAboveCapacity},
		"ephemeral storage 2^62 (kubelet)":  {node, series.ResourceEphemeralStorage, 1 << 62, rejectAboveCapacity},
		"ephemeral storage within capacity": {node, series.ResourceEphemeralStorage, 50 << 30, ""},
		"unknown node: 2^62 bytes":          {discovery.Capacity{}, series.ResourceMemory, 1 << 62, rejectAboveCeiling},
		"unknown node: 2^64-1 bytes":        {discovery.Capacity{}, series.ResourceEphemeralStorage, math.MaxUint64, rejectAboveCeiling},
		"unknown node: 1 TiB is plausible":  {discovery.Capacity{}, series.ResourceMemory, 1 << 40, ""},
		"unknown node: 64 cores plausible":  {discovery.Capacity{}, series.ResourceCPU, 64000, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got, _ := implausible(c.c, c.resource, c.v); got != c.want {
				t.Errorf("implausible(%s, %g) = %q, want %q", c.resource, c.v, got, c.want)
			}
		})
	}
}

// An implausible sample is counted and shown in the debug view, and never reaches the
// buffer; a plausible one beside it does.
func TestImplausibleSamplesAreNotRecorded(t *testing.T) {
	a := testAgent(t, "cgroupfs-v2")
	t0 := time.Unix(1_800_000_000, 0)
	p := discovery.Pod{UID: "u1", Namespace: "ns", Name: "web-1", ProfileRef: "web", Hash: "00000000000000a1",
		Interval: time.Second, Containers: []discovery.Container{{Name: "app", ID: "containerd://x"}}}
	a.setPods([]discovery.Pod{p}, discovery.Capacity{MilliCPU: 2000, MemoryBytes: 4 << 30}, "", t0)
	a.st.mu.Lock()
	cs := a.st.ctrs[containerKey(p.UID, "app")]
	a.recordLocked(p, cs, series.ResourceMemory, series.SignalUsage, math.MaxUint64, t0, sourceCgroup, nil)
	a.recordLocked(p, cs, series.ResourceEphemeralStorage, series.SignalUsage, 1<<62, t0, sourceKubelet, nil)
	a.recordLocked(p, cs, series.ResourceCPU, series.SignalUsage, 250, t0, sourceCgroup, nil)
	a.st.mu.Unlock()

	ws := a.buf.Windows()
	if len(ws) != 1 || ws[0].Series.Resource != series.ResourceCPU || ws[0].Hist.N != 1 {
		t.Fatalf("buffer holds %+v, want only the cpu sample", ws)
	}
	if got := testutil.ToFloat64(a.m.rejected.WithLabelValues(series.ResourceMemory, series.SignalUsage, sourceCgroup, rejectAboveCapacity)); got != 1 {
		t.Errorf("memory rejections counted %v, want 1", got)
	}
	rep := a.report(debug.Filter{})
	var msgs []string
	for _, pr := range rep.Pods {
		for _, c := range pr.Containers {
			for _, e := range c.Errors {
				msgs = append(msgs, e.Message)
			}
		}
	}
	if j := strings.Join(msgs, "\n"); !strings.Contains(j, "memory/usage sample 18446744073709551616 rejected: above the node's capacity") ||
		!strings.Contains(j, "ephemeral-storage/usage sample 4611686018427387904 rejected: above the plausible ceiling") {
		t.Errorf("debug view errors %q do not say why the samples were rejected", j)
	}
}
