package fallback

import (
	"sort"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

// point is one reading of one pod: a metrics.k8s.io PodMetrics (usage per container over
// Window, ending at At, the sample time Ballast files it under), or, with Ephemeral, the
// pod's ephemeral storage from the kubelet Summary API.
type point struct {
	At         time.Time
	Window     time.Duration
	Containers map[string]usage
	// Ephemeral points carry DiskBytes per container and the pod's disk-backed emptyDir
	// total (PodDiskBytes, when HasPodDisk).
	Ephemeral    bool
	PodDiskBytes int64
	HasPodDisk   bool
}

type usage struct {
	MilliCPU    int64
	MemoryBytes int64
	DiskBytes   int64
}

// maxPending bounds the undecided points held per pod (a live agent whose heartbeat stops
// advancing without expiring); the oldest go first.
const maxPending = 32

// podState is what the fallback keeps per enrolled pod between cycles.
type podState struct {
	// cursor is the newest sample time written for the pod through the fallback; points at
	// or before it are never written again (also across restarts: it is kept in the store).
	cursor time.Time
	// pending are points no path has claimed yet, oldest first.
	pending []point
}

// offer adds a fresh reading unless it is already held or written.
func (ps *podState) offer(p point) bool {
	if !p.At.After(ps.cursor) {
		return false
	}
	for _, q := range ps.pending {
		if q.At.Equal(p.At) {
			return false
		}
	}
	ps.pending = append(ps.pending, p)
	sort.Slice(ps.pending, func(i, j int) bool { return ps.pending[i].At.Before(ps.pending[j].At) })
	return true
}

// decision is what one cycle decided for one pod's held points.
type decision struct {
	write   []point   // the fallback's: write them (the cursor moved past them)
	prev    time.Time // the cursor before, to restore when the write fails
	agent   int       // the agent's: dropped
	dropped int       // over maxPending: dropped undecided
}

// decide hands every held point to its owner on the pod's node (series.OwnerOf): the
// fallback's are returned for writing (and leave the pending list), the agent's are dropped,
// undecided ones stay, at most maxPending of them.
func (ps *podState) decide(hb series.Heartbeat, known bool, now time.Time) decision {
	var d decision
	keep := ps.pending[:0]
	for _, p := range ps.pending {
		switch series.OwnerOf(hb, known, p.At, now) {
		case series.OwnerFallback:
			d.write = append(d.write, p)
		case series.OwnerAgent:
			d.agent++
		default:
			keep = append(keep, p)
		}
	}
	if over := len(keep) - maxPending; over > 0 {
		d.dropped = over
		keep = append(keep[:0], keep[over:]...)
	}
	ps.pending = keep
	d.prev = ps.cursor
	if n := len(d.write); n > 0 && d.write[n-1].At.After(ps.cursor) {
		ps.cursor = d.write[n-1].At
	}
	return d
}

// undo puts back the points of a decision whose write failed, so they are offered again.
func (ps *podState) undo(d decision) {
	ps.cursor = d.prev
	for _, p := range d.write {
		ps.offer(p)
	}
}

// windowUpdates turns the points a cycle writes into store windows: per (profile,
// container, resource) and window start, one histogram whose samples are all marked as
// fallback samples at their metrics.k8s.io resolution. Containers not in keep are skipped.
func windowUpdates(profile string, pts []point, keep map[string]bool, window time.Duration) []series.WindowUpdate {
	type key struct {
		container, resource string
		start               time.Time
	}
	hists := map[key]*series.Histogram{}
	var order []key
	add := func(k key, v float64, at time.Time, res time.Duration) {
		h := hists[k]
		if h == nil {
			h = &series.Histogram{}
			hists[k] = h
			order = append(order, k)
		}
		if h.Add(v, at) == nil {
			h.MarkFallback(1, res)
		}
	}
	for _, p := range pts {
		start := series.WindowStart(p.At, window)
		if p.Ephemeral && p.HasPodDisk {
			add(key{"", series.ResourceEphemeralStorage, start}, float64(p.PodDiskBytes), p.At, p.Window)
		}
		for name, u := range p.Containers {
			if !keep[name] {
				continue
			}
			if p.Ephemeral {
				add(key{name, series.ResourceEphemeralStorage, start}, float64(u.DiskBytes), p.At, p.Window)
				continue
			}
			add(key{name, series.ResourceCPU, start}, float64(u.MilliCPU), p.At, p.Window)
			add(key{name, series.ResourceMemory, start}, float64(u.MemoryBytes), p.At, p.Window)
		}
	}
	out := make([]series.WindowUpdate, 0, len(order))
	for _, k := range order {
		out = append(out, series.WindowUpdate{Start: k.start, Hist: hists[k],
			Series: series.SeriesID{Profile: profile, Container: k.container, Resource: k.resource, Signal: series.SignalUsage}})
	}
	return out
}
