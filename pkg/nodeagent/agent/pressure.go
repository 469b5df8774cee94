package agent

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Results of ballast_node_pressure_readings_total.
const (
	pressureWritten    = "written"
	pressureBelowFloor = "below_floor"
	pressureUnbound    = "unbound"
	pressureFailed     = "failed"
)

// pressureWriteTimeout bounds one cycle's pressure write: readings are for fast raises,
// so a late one is worth little and is dropped, not queued.
const pressureWriteTimeout = time.Second

// pressureCounters are the children of ballast_node_pressure_readings_total, resolved once:
// the sampling cycle counts every container's reading.
type pressureCounters map[[2]string]prometheus.Counter

func (p pressureCounters) inc(source, result string) { p[[2]string{source, result}].Inc() }

func newPressureCounters(reg prometheus.Registerer) pressureCounters {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ballast_node_pressure_readings_total",
		Help: "Per-container memory-pressure readings (stall per second over a sampling interval), by source (psi, ebpf) and result: written to the profile's pressure stream, below_floor (under 1% stalled, not written), unbound (pod has no profile yet), failed (Valkey write failed; dropped).",
	}, []string{"source", "result"})
	reg.MustRegister(c)
	out := pressureCounters{}
	for _, src := range []string{series.PressureSourcePSI, series.PressureSourceEBPF} {
		for _, r := range []string{pressureWritten, pressureBelowFloor, pressureUnbound, pressureFailed} {
			out[[2]string{src, r}] = c.WithLabelValues(src, r)
		}
	}
	return out
}

// pressureItem is one reading waiting for this cycle's write.
type pressureItem struct {
	hash string
	r    series.PressureReading
}

// psiPressureLocked turns the change of a container's memory.pressure "some" total since
// the previous cycle into a reading (cgroup v2). It returns nil on the first cycle, after
// a counter reset and without PSI.
func (a *Agent) psiPressureLocked(p *discovery.Pod, cs *ctrState, psi *cgroup.PSI, now time.Time) *pressureItem {
	if psi == nil {
		return nil
	}
	total, prev, prevAt, had := psi.Some.TotalUsec, cs.psiTotal, cs.psiAt, cs.hasPSI
	cs.psiTotal, cs.psiAt, cs.hasPSI = total, now, true
	if !had || total < prev || !now.After(prevAt) {
		return nil
	}
	stalled := time.Duration(total-prev) * time.Microsecond
	return a.pressureLocked(p, cs, series.PressureSourcePSI, stalled, now.Sub(prevAt), now)
}

// stallPressureLocked turns an eBPF reclaim-stall reading into a pressure reading, for
// containers without PSI (cgroup v1 nodes).
func (a *Agent) stallPressureLocked(p *discovery.Pod, cs *ctrState, rd ebpf.StallReading, now time.Time) *pressureItem {
	if cs.hasPSI || rd.Interval <= 0 {
		return nil
	}
	return a.pressureLocked(p, cs, series.PressureSourceEBPF, rd.Stalled, rd.Interval, now)
}

// pressureLocked records a reading in the debug state and returns it for writing when it
// reaches the floor and the pod is bound. Below the floor (every idle container, every
// cycle) it allocates nothing.
func (a *Agent) pressureLocked(p *discovery.Pod, cs *ctrState, source string, stalled, interval time.Duration, now time.Time) *pressureItem {
	r := series.PressureReading{Container: cs.name, Node: a.o.NodeName, At: now, Interval: interval,
		StallPerSec: series.StallPerSecond(stalled, interval), Source: source}
	cs.pressure, cs.hasPressure = r, true
	switch {
	case r.StallPerSec < series.PressureFloor:
		a.m.pressure.inc(source, pressureBelowFloor)
		return nil
	case p.Hash == "":
		a.m.pressure.inc(source, pressureUnbound)
		return nil
	}
	r.Pod = p.Key()
	return &pressureItem{hash: p.Hash, r: r}
}

// writePressure sends one cycle's readings in one pipelined batch. A failed write is
// dropped (the next cycle brings a fresher reading) and counted.
func (a *Agent) writePressure(ctx context.Context, items []pressureItem) {
	if len(items) == 0 {
		return
	}
	entries := make([]store.PressureEntry, len(items))
	for i, it := range items {
		entries[i] = store.PressureEntry{Profile: it.hash, Reading: it.r}
	}
	w, err := a.store.writer(a.layout())
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, pressureWriteTimeout)
		err = w.AddPressure(wctx, entries)
		cancel()
	}
	result := pressureWritten
	if err != nil {
		result = pressureFailed
		a.store.failed(a.now(), err)
		a.m.storeUp.Set(0)
		a.log.V(1).Info("pressure readings dropped", "count", len(items), "error", err.Error())
	}
	for _, it := range items {
		a.m.pressure.inc(it.r.Source, result)
	}
}
