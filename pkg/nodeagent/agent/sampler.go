package agent

import (
	"context"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/oom"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
	"github.com/ballastk8s/ballast/pkg/series"
)

// cgroupSource is the cgroup source (cgroup v1/v2 files through the agent's reader) and
// the agent's sampling loop: its turns apply discovery's changes to the pod set, and
// /healthz watches them.
type cgroupSource struct{ a *Agent }

// CgroupSource builds the cgroup source.
func CgroupSource(a *Agent) (Source, error) { return &cgroupSource{a: a}, nil }

func (src *cgroupSource) Name() string { return sourceCgroup }

func (src *cgroupSource) Detail() string {
	a := src.a
	return "cgroup " + a.cg.Version().String() + " at " + a.o.CgroupRoot + " (driver " + a.o.CgroupDriver + "), kubelet cgroupRoot " + a.kroot.String()
}

func (src *cgroupSource) Signals() []string {
	return []string{series.ResourceCPU, series.ResourceMemory}
}

func (src *cgroupSource) Close() error { return nil }

// group samples the pods that share one sampling interval. Each group has its own
// Collector, because a Collector forgets the targets missing from a Collect.
type group struct {
	interval time.Duration
	coll     *cgroup.Collector
	pods     []discovery.Pod
	next     time.Time
}

// Run is the cgroup source's loop: every group is collected at its interval.
func (src *cgroupSource) Run(ctx context.Context) error {
	a := src.a
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
			src.regroup(groups, a.applySnapshot(snap, now), now)
		}
		next := now.Add(maxWait)
		for _, g := range groups {
			if !now.Before(g.next) {
				src.cycle(ctx, g, now)
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

// regroup makes one group per sampling interval of pods.
func (src *cgroupSource) regroup(groups map[time.Duration]*group, pods []discovery.Pod, now time.Time) {
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
			g = &group{interval: iv, coll: cgroup.NewCollector(src.a.cg), next: now}
			groups[iv] = g
		}
		g.pods = ps
	}
}

// watchReq asks for an OOM watch on a container's cgroup directory (relative to the root).
type watchReq struct{ key, dir string }

// cycle reads the cgroups of one group's containers and records their samples.
func (src *cgroupSource) cycle(ctx context.Context, g *group, now time.Time) {
	a := src.a
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
		w, ev := src.applyReadingLocked(ps.pod, cs, rd, now)
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
		a.oomw.watch(w)
	}
	if a.bpf.stalls() {
		keys := make([]string, len(targets))
		for i, t := range targets {
			keys[i] = t.Key
		}
		press = append(press, a.bpf.collectStall(ctx, keys, now)...)
	}
	a.writePressure(ctx, press)
	for _, ev := range polled {
		a.onOOM(ctx, ev)
	}
}

// applyReadingLocked records one container's cgroup reading. It returns an OOM watch to
// add, or an OOM event found by polling (containers without an inotify watch).
func (src *cgroupSource) applyReadingLocked(p discovery.Pod, cs *ctrState, rd *cgroup.Reading, now time.Time) (*watchReq, *oom.Event) {
	a := src.a
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
