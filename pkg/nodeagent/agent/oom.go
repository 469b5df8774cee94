package agent

import (
	"context"
	"sync"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
	"github.com/ballastk8s/ballast/pkg/nodeagent/oom"
	"github.com/ballastk8s/ballast/pkg/series"
)

const (
	// oomQueueMax bounds the OOM events waiting for Valkey or for their pod's profile.
	oomQueueMax = 1000
	// oomQueueTTL drops a queued event whose pod never got a profile hash.
	oomQueueTTL = time.Hour
	// oomWriteTimeout bounds one immediate OOM write.
	oomWriteTimeout = 2 * time.Second
	// oomKindUnknown is the kind of a kill found by polling counters (cgroup v1 without
	// eBPF), which cannot tell which limit was hit.
	oomKindUnknown = "unknown"
)

// oomItem is an OOM kill waiting to be written.
type oomItem struct {
	podUID, profileRef, hash, kind string
	ev                             series.OOMEvent
	queuedAt                       time.Time
}

// oomQueue holds OOM events that could not be written yet, oldest dropped first.
type oomQueue struct {
	mu      sync.Mutex
	items   []oomItem
	dropped int64
}

func (q *oomQueue) push(it oomItem) (dropped bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, it)
	if len(q.items) > oomQueueMax {
		q.items = q.items[1:]
		q.dropped++
		return true
	}
	return false
}

func (q *oomQueue) drain() []oomItem {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items = nil
	return out
}

func (q *oomQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// onOOM turns a kill into an OOM stream entry and writes it at once when the pod's profile
// hash is known; otherwise (or when Valkey fails) it is queued and retried by the flusher.
// While the eBPF OOM program runs, a kill the files report is held for bpfGrace first, so
// the eBPF record of the same kill, which carries the victim's details, is the one written
// (the memory.events counter moves just before the kernel marks the victim).
func (a *Agent) onOOM(ctx context.Context, e oom.Event) {
	if a.bpf.oomAvailable() {
		time.AfterFunc(bpfGrace, func() {
			if ctx.Err() == nil {
				a.handleOOM(ctx, e, false, nil)
			}
		})
		return
	}
	a.handleOOM(ctx, e, false, nil)
}

// bpfGrace is how long a kill seen in the files waits for its eBPF record.
const bpfGrace = 250 * time.Millisecond

// handleOOM is onOOM for either path: fromBPF for a kill the eBPF programs saw (victim is
// its record), else an oom_kill increase of the cgroup files. A kill both report is
// written once.
func (a *Agent) handleOOM(ctx context.Context, e oom.Event, fromBPF bool, victim *ebpf.OOMKill) {
	kind := string(e.Kind)
	if kind == "" {
		kind = oomKindUnknown // polled (cgroup v1 without eBPF): the counters cannot tell which limit was hit
	}
	a.st.mu.Lock()
	cs := a.st.ctrs[e.Key]
	var ps *podState
	if cs != nil {
		ps = a.st.pods[cs.podUID]
	}
	if cs == nil || ps == nil {
		a.st.mu.Unlock()
		a.m.oomEvents.WithLabelValues(kind, "dropped").Inc()
		a.log.Info("oom kill of a container no longer tracked", "container", e.Key, "kind", kind)
		return
	}
	if a.bpf != nil {
		e.Count = cs.oomLedger.fresh(fromBPF, max(e.Count, 1), e.Time, max(oomDedupWindow, 2*ps.pod.Interval))
		if e.Count == 0 {
			a.st.mu.Unlock()
			a.m.oomEvents.WithLabelValues(kind, "deduplicated").Inc()
			return
		}
	}
	cs.oomKills[kind] += int64(max(e.Count, 1))
	it := oomItem{podUID: cs.podUID, profileRef: ps.pod.ProfileRef, hash: ps.pod.Hash, kind: kind, queuedAt: a.now(),
		ev: series.OOMEvent{Container: cs.name, Pod: ps.pod.Key(), Node: a.o.NodeName, At: e.Time, Kind: kind}}
	peak, limit, hasLimit := cs.maxSeen, cs.limit, cs.hasLimit
	loc, located := cs.loc, cs.located
	a.st.mu.Unlock()

	// The files still hold the container's lifetime peak and its limit right after the
	// kill; what the sampler saw last is the fallback.
	if located {
		ms, _ := a.cg.ReadMemoryState(loc)
		if ms.HasPeak {
			peak = max(peak, ms.PeakBytes)
		}
		if ms.HasLimit {
			limit, hasLimit = ms.LimitBytes, true
		}
	}
	if victim != nil {
		it.ev.PID, it.ev.Comm, it.ev.LimitCgroupID = victim.PID, victim.Comm, victim.LimitMemcgID
		it.ev.RSSBytes = clampInt64(victim.AnonBytes + victim.FileBytes + victim.ShmemBytes)
	}
	it.ev.PeakBytes = clampInt64(peak)
	if hasLimit && limit != cgroup.Unlimited {
		it.ev.LimitBytes = clampInt64(limit)
	}
	a.log.Info("oom kill", "pod", it.ev.Pod, "container", it.ev.Container, "kind", kind,
		"peakBytes", it.ev.PeakBytes, "limitBytes", it.ev.LimitBytes, "profile", it.profileRef,
		"pid", it.ev.PID, "comm", it.ev.Comm, "rssBytes", it.ev.RSSBytes, "limitCgroup", it.ev.LimitCgroupID)
	if it.hash == "" {
		a.queueOOM(it)
		return
	}
	a.writeOOM(ctx, it)
}

func (a *Agent) queueOOM(it oomItem) {
	if a.oomq.push(it) {
		a.m.oomEvents.WithLabelValues(it.kind, "dropped").Inc()
	}
	a.m.oomEvents.WithLabelValues(it.kind, "queued").Inc()
}

// writeOOM appends one event to the profile's OOM stream, queueing it on failure.
func (a *Agent) writeOOM(ctx context.Context, it oomItem) bool {
	w, err := a.store.writer(a.layout())
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, oomWriteTimeout)
		_, err = w.AddOOM(cctx, it.hash, it.ev)
		cancel()
	}
	if err != nil {
		_, _ = a.store.failed(a.now(), err)
		a.m.storeUp.Set(0)
		a.units.Fail(sourceOOM, a.now(), "write", err)
		a.queueOOM(it)
		return false
	}
	a.m.storeUp.Set(1)
	a.m.oomEvents.WithLabelValues(it.kind, "written").Inc()
	return true
}

// retryOOM writes the queued events whose profile hash is now known.
func (a *Agent) retryOOM(ctx context.Context, now time.Time) {
	for _, it := range a.oomq.drain() {
		if it.hash == "" {
			it.hash = a.hashOfPod(it.podUID, it.profileRef)
		}
		switch {
		case it.hash != "":
			if !a.writeOOM(ctx, it) {
				return // the store is down: the rest waits for the next flush (writeOOM requeued it)
			}
		case now.Sub(it.queuedAt) > oomQueueTTL:
			a.m.oomEvents.WithLabelValues(it.kind, "dropped").Inc()
		default:
			a.oomq.push(it)
		}
	}
}

// hashOfPod resolves the profile hash of a pod that is on the node or left it recently.
func (a *Agent) hashOfPod(uid, fallbackRef string) string {
	a.st.mu.Lock()
	ref := fallbackRef
	if ps := a.st.pods[uid]; ps != nil {
		if ps.pod.Hash != "" || ps.pod.RefIgnored {
			a.st.mu.Unlock()
			return ps.pod.Hash // "" for an ignored profile-ref: its samples stay held
		}
		ref = ps.pod.ProfileRef
	} else if d, ok := a.st.departed[uid]; ok && d.profileRef != "" {
		ref = d.profileRef
	}
	a.st.mu.Unlock()
	if ref == "" || a.disco == nil {
		return ""
	}
	return a.disco.ProfileHash(ref)
}

func clampInt64(v uint64) int64 {
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}
