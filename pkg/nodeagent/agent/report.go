package agent

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/store"
)

// report builds the debug endpoint's view.
func (a *Agent) report(f debug.Filter) debug.Report {
	now := a.now()
	bs := a.buf.Stats()
	ss := a.store.snapshot()
	r := debug.Report{
		Node: a.o.NodeName, Time: now, OOMQueued: a.oomq.len(),
		Store: debug.StoreReport{URL: store.RedactURL(a.o.RedisURL), Connected: ss.connected, LastFlush: ss.lastFlush,
			LastFlushWindows: ss.lastFlushWindows, LastError: ss.lastErr, LastErrorAt: ss.lastErrAt,
			ConsecutiveFailures: ss.consecutiveFailures, FlushedWindows: ss.flushedWindows, FlushedSamples: ss.flushedSamples, Full: ss.full},
		Buffer: debug.BufferReport{Filed: bs.Filed, FiledLimit: bs.Limits.Filed, Pending: bs.Pending,
			PendingLimit: bs.Limits.Pending, Dropped: bs.Dropped, DroppedSamples: bs.DroppedSamples},
	}
	if ss.lastFlushDur > 0 {
		r.Store.LastFlushDuration = ss.lastFlushDur.String()
	}
	if a.disco != nil {
		snap := a.disco.Snapshot()
		r.Config = debug.ConfigReport{Synced: snap.Synced, BallastConfigFound: snap.ConfigFound, Retention: snap.Retention.String()}
	}

	for _, h := range a.units.Health() {
		sr := debug.SourceReport{Name: h.Name, Detail: h.Detail, LastRun: h.LastRun, Runs: h.Runs, Errors: h.Errors,
			LastError: h.LastError, LastErrorAt: h.LastErrorAt}
		if h.LastDuration > 0 {
			sr.LastDuration = h.LastDuration.String()
		}
		r.Sources = append(r.Sources, sr)
	}
	a.st.mu.Lock()
	r.Config.Paused = a.st.paused
	wantPod := func(key string) bool { return f.Pod == "" || f.Pod == key }
	owners := map[string]bool{}
	for _, ps := range a.st.pods {
		p := ps.pod
		if !wantPod(p.Key()) {
			continue
		}
		owners[owner(p)] = true
		pr := debug.PodReport{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Mode: p.Mode, QOS: p.QOS,
			ProfileRef: p.ProfileRef, PolicyRef: p.PolicyRef, Hash: p.Hash, Interval: p.Interval.String(),
			Terminating: p.Terminating, Unbound: p.Hash == "", ProfileRefIgnored: p.RefIgnored}
		for _, c := range p.Containers {
			cr := debug.ContainerReport{Name: c.Name, ContainerID: c.ID, Sidecar: c.Sidecar, Last: []debug.SampleReport{}}
			if cs := a.st.ctrs[containerKey(p.UID, c.Name)]; cs != nil {
				fillContainer(&cr, cs)
			}
			pr.Containers = append(pr.Containers, cr)
		}
		r.Pods = append(r.Pods, pr)
	}
	slices.SortFunc(r.Pods, func(x, y debug.PodReport) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	series := map[tallyKey]*debug.SeriesReport{}
	for k, t := range a.st.tallies {
		if f.Pod != "" && !owners[k.owner] {
			continue
		}
		series[k] = newSeriesReport(k, t.recorded, t.flushed)
	}
	a.st.mu.Unlock()

	for _, w := range a.buf.Windows() {
		k := tallyKey{owner: w.Hash, s: w.Series}
		if w.Pod != "" {
			k.owner = "pod:" + w.Pod
		}
		if f.Pod != "" && !owners[k.owner] {
			continue
		}
		sr := series[k]
		if sr == nil {
			sr = newSeriesReport(k, 0, 0)
			series[k] = sr
		}
		h := w.Hist
		sr.Windows = append(sr.Windows, debug.WindowReport{Start: w.Start, Count: h.Count(), Min: h.Min(), Max: h.Max(),
			Mean: h.Sum() / float64(max(h.Count(), 1)), P50: h.Quantile(50), P95: h.Quantile(95),
			First: h.FirstSeen(), Last: h.LastSeen()})
	}
	for _, sr := range series {
		r.Series = append(r.Series, *sr)
	}
	slices.SortFunc(r.Series, func(x, y debug.SeriesReport) int {
		return cmp.Or(cmp.Compare(x.Profile, y.Profile), cmp.Compare(x.Pod, y.Pod), cmp.Compare(x.Container, y.Container),
			cmp.Compare(x.Resource, y.Resource), cmp.Compare(x.Signal, y.Signal))
	})
	return r
}

func newSeriesReport(k tallyKey, recorded, flushed int64) *debug.SeriesReport {
	sr := &debug.SeriesReport{Container: k.s.Container, Resource: k.s.Resource, Signal: k.s.Signal,
		Recorded: recorded, Flushed: flushed}
	if uid, ok := strings.CutPrefix(k.owner, "pod:"); ok {
		sr.Pod = uid
	} else {
		sr.Profile = k.owner
	}
	return sr
}

func fillContainer(cr *debug.ContainerReport, cs *ctrState) {
	if cs.located {
		cr.CgroupCPU, cr.CgroupMemory = cs.cpuPath, cs.memPath
	}
	cr.OOMWatched = cs.oomWatched
	for sr, l := range cs.last {
		cr.Last = append(cr.Last, debug.SampleReport{Signal: sr.Resource + "/" + sr.Signal, Value: l.v, Source: l.source, At: l.at, Exact: l.exact})
	}
	slices.SortFunc(cr.Last, func(x, y debug.SampleReport) int { return cmp.Compare(x.Signal, y.Signal) })
	for _, src := range slices.Sorted(maps.Keys(cs.errs)) {
		e := cs.errs[src]
		cr.Errors = append(cr.Errors, debug.ErrorReport{Source: src, Message: e.msg, At: e.at, Count: e.count})
	}
	if len(cs.oomKills) > 0 {
		cr.OOMKills = maps.Clone(cs.oomKills)
	}
	if s := cs.stall; s != nil {
		cr.ReclaimStall = &debug.StallReport{MemcgID: s.MemcgID, At: cs.stallAt, Interval: s.Interval.String(),
			Passes: s.Passes, Stalled: s.Stalled.String(), Fraction: s.Fraction, MaxPass: s.MaxPass.String(),
			ReclaimedPages: s.ReclaimedPages, TotalPasses: s.TotalPasses, TotalStalled: s.TotalStalled.String()}
	}
	if r := cs.pressure; cs.hasPressure {
		cr.MemoryPressure = &debug.PressureReport{At: r.At, Interval: r.Interval.String(), StallPerSec: r.StallPerSec, Source: r.Source}
	}
}
