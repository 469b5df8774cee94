package agent

import (
	"context"
	"fmt"
	"k8s.io/klog/v2"
	"strings"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/buffer"
	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/oom"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
	"github.com/ballastk8s/ballast/pkg/series"
)

// group samples the pods that share one sampling interval. Each group has its own
// Collector, because a Collector forgets the targets missing from a Collect.
type group struct {
	interval time.Duration
	coll     *cgroup.Collector
	pods     []discovery.Pod
	next     time.Time
}

// runSampler is the cgroup source's loop: every group is collected at its interval.
func (a *Agent) runSampler(ctx context.Context) error {
	groups := map[time.Duration]*group{}
	defer func() {
		for _, g := range groups {
			_ = g.coll.Close()
		}
	}()
	var seen uint64
	first := true
	return a.loop(ctx, a.disco.Changed(), func(ctx context.Context, now time.Time) time.Time {
		a.heartbeat.Store(now.UnixNano())
		if snap := a.disco.Snapshot(); first || snap.Version != seen {
			first, seen = false, snap.Version
			a.regroup(groups, snap, now)
		}
		next := now.Add(maxWait)
		for _, g := range groups {
			if !now.Before(g.next) {
				a.cycle(ctx, g, now)
				g.next = nextTick(g.next, g.interval, a.now())
			}
			next = minTime(next, g.next)
		}
		a.since.CompareAndSwap(0, now.UnixNano())
		a.sampled.Store(now.UnixNano())
		return next
	})
}

// nextTick advances a schedule by whole intervals past now (missed ticks are skipped).
func nextTick(next time.Time, interval time.Duration, now time.Time) time.Time {
	next = next.Add(interval)
	if !next.After(now) {
		next = now.Add(interval)
	}
	return next
}

// regroup applies a discovery snapshot: the state's pod set and one group per interval.
func (a *Agent) regroup(groups map[time.Duration]*group, snap discovery.Snapshot, now time.Time) {
	pods := snap.Pods
	paused := ""
	switch {
	case !snap.Synced:
		paused, pods = "waiting for the informers to sync", nil
	case !snap.ConfigFound:
		paused, pods = "BallastConfig ballast not found: nothing is measured (SPEC §2.1)", nil
	}
	a.retention.Store(int64(snap.Retention))
	a.buf.SetWindow(a.layout().Window)
	a.setPods(pods, snap.Capacity, paused, now)
	by := map[time.Duration][]discovery.Pod{}
	for _, p := range pods {
		by[p.Interval] = append(by[p.Interval], p)
	}
	for iv, g := range groups {
		if len(by[iv]) == 0 {
			_ = g.coll.Close()
			delete(groups, iv)
		}
	}
	for iv, ps := range by {
		g := groups[iv]
		if g == nil {
			g = &group{interval: iv, coll: cgroup.NewCollector(a.cg), next: now}
			groups[iv] = g
		}
		g.pods = ps
	}
}

// setPods makes pods the state's pod set and stops watching containers that are gone.
func (a *Agent) setPods(pods []discovery.Pod, capacity discovery.Capacity, paused string, now time.Time) {
	a.st.mu.Lock()
	a.st.paused = paused
	a.st.capacity = capacity
	gone := a.st.setPodsLocked(pods, now)
	newlyIgnored := a.st.ignoredRefsLocked(pods)
	bound, unbound := 0, 0
	for _, p := range pods {
		if p.Hash != "" {
			bound++
		} else {
			unbound++
		}
	}
	a.st.mu.Unlock()
	for _, p := range newlyIgnored {
		a.m.refsIgnored.Inc()
		a.log.Info("ignoring a profile-ref the pod's labels do not resolve to; its samples are held until it is stamped with its own profile",
			"pod", klog.KRef(p.Namespace, p.Name), "profileRef", p.ProfileRef)
	}
	a.m.pods.WithLabelValues("bound").Set(float64(bound))
	a.m.pods.WithLabelValues("unbound").Set(float64(unbound))
	if a.oomw != nil {
		for _, k := range gone {
			a.oomw.Remove(k)
		}
	}
}

// watchReq asks for an OOM watch on a container's cgroup directory (relative to the root).
type watchReq struct{ key, dir string }

// cycle reads the cgroups of one group's containers and records their samples.
func (a *Agent) cycle(ctx context.Context, g *group, now time.Time) {
	targets := make([]cgroup.Target, 0, 2*len(g.pods))
	for _, p := range g.pods {
		for _, c := range p.Containers {
			if c.ID != "" {
				targets = append(targets, cgroup.Target{Key: containerKey(p.UID, c.Name), PodUID: p.UID,
					QOS: cgroup.QOSClass(p.QOS), ContainerID: c.ID})
			}
		}
	}
	readings, errList, _ := source.Collect(ctx, a.units, g.coll, now, targets)
	errs := errorsByKey(errList)

	var watches []watchReq
	var polled []oom.Event
	var press []pressureItem
	a.st.mu.Lock()
	got := make(map[string]bool, len(readings))
	for i := range readings {
		rd := &readings[i]
		got[rd.Key] = true
		cs := a.st.ctrs[rd.Key]
		if cs == nil {
			continue
		}
		ps := a.st.pods[cs.podUID]
		if ps == nil {
			continue
		}
		w, ev := a.applyReadingLocked(ps.pod, cs, rd, now)
		if it := a.psiPressureLocked(&ps.pod, cs, rd.Sample.MemoryPressure, now); it != nil {
			press = append(press, *it)
		}
		if ev != nil {
			polled = append(polled, *ev)
		}
		if w != nil {
			watches = append(watches, *w)
		}
	}
	for _, t := range targets {
		cs := a.st.ctrs[t.Key]
		if cs == nil {
			continue
		}
		cs.cgroupTried = true
		if !got[t.Key] {
			cs.located, cs.cpuOK, cs.memOK = false, false, false
			msg := errs[t.Key]
			if msg == "" {
				msg = "cgroup not readable"
			}
			cs.errorLocked(sourceCgroup, msg, now)
		} else if msg := errs[t.Key]; msg != "" {
			cs.errorLocked(sourceCgroup, msg, now)
		}
	}
	a.st.mu.Unlock()

	for _, w := range watches {
		a.watchOOM(w)
	}
	if a.stall != nil {
		keys := make([]string, len(targets))
		for i, t := range targets {
			keys[i] = t.Key
		}
		press = append(press, a.collectStall(ctx, keys, now)...)
	}
	a.writePressure(ctx, press)
	for _, ev := range polled {
		a.onOOM(ctx, ev)
	}
}

// applyReadingLocked records one container's cgroup reading. It returns an OOM watch to
// add, or an OOM event found by polling (containers without an inotify watch).
func (a *Agent) applyReadingLocked(p discovery.Pod, cs *ctrState, rd *cgroup.Reading, now time.Time) (*watchReq, *oom.Event) {
	if !cs.located || cs.loc != rd.Location {
		cs.cpuPath, cs.memPath = a.cg.Abs(rd.Location.CPUDir), a.cg.Abs(rd.Location.MemoryDir)
		if a.bpf != nil {
			cs.memcgID, _ = a.cg.ID(rd.Location.MemoryDir) // 0 (not joined) when it vanished meanwhile
		}
	}
	cs.located, cs.loc = true, rd.Location
	s := rd.Sample
	cs.cpuOK, cs.memOK = s.HasCPU, s.HasMemory
	if rd.HasMilliCPU {
		a.recordLocked(p, cs, series.ResourceCPU, series.SignalUsage, float64(rd.MilliCPU), now, sourceCgroup, nil)
	}
	if s.HasMemory {
		a.recordLocked(p, cs, series.ResourceMemory, series.SignalUsage, float64(s.WorkingSetBytes), now, sourceCgroup, nil)
		cs.maxSeen = max(cs.maxSeen, s.MemoryUsageBytes)
	}
	if rd.HasPeak {
		exact := rd.Peak.Exact
		a.recordLocked(p, cs, series.ResourceMemory, series.SignalPeak, float64(rd.Peak.Bytes), now, sourceCgroup, &exact)
		cs.maxSeen = max(cs.maxSeen, rd.Peak.Bytes)
	}
	if s.HasMemoryLimit {
		cs.limit, cs.hasLimit = s.MemoryLimitBytes, true
	}
	var ev *oom.Event
	if s.HasOOMKills {
		if !cs.oomWatched && cs.hasPolledOOM && s.OOMKills > cs.polledOOM {
			ev = &oom.Event{Key: cs.key, Dir: cs.memPath, Count: s.OOMKills - cs.polledOOM, Time: now}
		}
		cs.polledOOM, cs.hasPolledOOM = s.OOMKills, true
	}
	if a.oomw != nil && rd.Location.Version == cgroup.V2 && (!cs.oomWatched || cs.oomDir != rd.Location.MemoryDir) {
		return &watchReq{key: cs.key, dir: rd.Location.MemoryDir}, ev
	}
	return nil, ev
}

// recordLocked adds one sample to the buffer under the pod's hash (pending under the pod
// while it is unbound) and updates the counters and the debug view. cs is nil for the
// pod-level series.
func (a *Agent) recordLocked(p discovery.Pod, cs *ctrState, resource, signal string, v float64, at time.Time, source string, exact *bool) {
	sr := buffer.Series{Resource: resource, Signal: signal}
	if cs != nil {
		sr.Container = cs.name
	}
	if reason, msg := implausible(a.st.capacity, resource, v); reason != "" {
		a.m.rejected.WithLabelValues(resource, signal, source, reason).Inc()
		if cs != nil {
			cs.errorLocked(source, fmt.Sprintf("%s/%s sample %.0f rejected: %s", resource, signal, v, msg), at)
		}
		return
	}
	if err := a.buf.Add(p.Hash, p.UID, sr, v, at); err != nil {
		a.m.rejected.WithLabelValues(resource, signal, source, rejectInvalid).Inc()
		if cs != nil {
			cs.errorLocked(source, fmt.Sprintf("%s/%s sample %v rejected: %v", resource, signal, v, err), at)
		}
		return
	}
	a.st.tallyLocked(owner(p), sr, 1, at)
	a.sampleCounter(resource, signal, source).Inc()
	if cs != nil {
		cs.last[sr] = lastSample{v: v, at: at, source: source, exact: exact}
	}
}

// errorsByKey joins each target's error messages into one line for the debug view.
func errorsByKey(errs []source.Error) map[string]string {
	out := make(map[string]string, len(errs))
	for _, e := range errs {
		msg := strings.ReplaceAll(e.Err.Error(), "\n", "; ")
		if prev := out[e.Key]; prev != "" {
			msg = prev + "; " + msg
		}
		out[e.Key] = msg
	}
	return out
}
