package oom

import (
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
)

// Kind is the limit that caused an OOM kill.
type Kind string

const (
	// KindContainer: the container's own memory limit was hit.
	KindContainer Kind = "container"
	// KindPod: the pod-level memory limit (the pod cgroup's memory.max) was hit.
	KindPod Kind = "pod"
	// KindNode: a limit above the pod (kubepods: node allocatable; a QoS slice) or
	// system-wide memory exhaustion.
	KindNode Kind = "node"
)

// Event is one observed increase of a watched container's oom_kill counter.
type Event struct {
	// Key and Dir are what the container was added with; Dir is its cgroup directory.
	Key string
	Dir string
	// Kind is the limit that was hit.
	Kind Kind
	// Count is the increase of oom_kill in the container's memory.events.local since the
	// previous observation. With memory.oom.group=1 one killed process can count more than
	// once (the scenario1 fixture: one hog, oom_kill 2).
	Count uint64
	// Time is when the increase was observed.
	Time time.Time
}

// DefaultPendingTTL bounds how long an "oom" increase waits for the kill it caused. The
// kernel counts "oom" just before it picks and kills a victim, but notifications are rate
// limited per file (10 ms), so the two can be observed in separate reads; an "oom" that
// killed nothing (the victim was already exiting) must not explain a kill much later.
const DefaultPendingTTL = 10 * time.Second

// pending is a number of "oom" increments not yet matched with kills.
type pending struct {
	n  uint64
	at time.Time // when n last grew
}

func (p *pending) add(n uint64, now time.Time) {
	if n > 0 {
		p.n, p.at = p.n+n, now
	}
}

// take consumes up to n pending OOMs that are not older than ttl; it reports whether any
// were pending.
func (p *pending) take(n uint64, now time.Time, ttl time.Duration) bool {
	if p.n == 0 || now.Sub(p.at) > ttl {
		p.n = 0
		return false
	}
	p.n -= min(p.n, n)
	return true
}

type ctrState struct {
	dir, podDir string
	last        cgroup.MemoryEvents
	ooms        pending
}

type podState struct {
	last cgroup.MemoryEvents
	ooms pending
	refs int
}

// tracker is the pure bookkeeping behind Watcher: baselines, pending OOMs and the
// attribution of kills. It does no I/O and reads no clock. Not safe for concurrent use.
type tracker struct {
	ttl        time.Duration
	containers map[string]*ctrState
	pods       map[string]*podState
}

func newTracker(ttl time.Duration) *tracker {
	return &tracker{ttl: ttl, containers: make(map[string]*ctrState), pods: make(map[string]*podState)}
}

// add registers a container with its and its pod's current counters as baselines (kills
// that happened before are not reported). Re-adding a key replaces it.
func (t *tracker) add(key, dir, podDir string, ctr, pod cgroup.MemoryEvents) {
	t.remove(key)
	t.containers[key] = &ctrState{dir: dir, podDir: podDir, last: ctr}
	if p, ok := t.pods[podDir]; ok {
		p.refs++
		return
	}
	t.pods[podDir] = &podState{last: pod, refs: 1}
}

// remove forgets a container; it reports the pod directory if that was its pod's last
// container (so the caller can stop watching the pod).
func (t *tracker) remove(key string) (podGone string, ok bool) {
	c, found := t.containers[key]
	if !found {
		return "", false
	}
	delete(t.containers, key)
	if p := t.pods[c.podDir]; p != nil {
		if p.refs--; p.refs <= 0 {
			delete(t.pods, c.podDir)
			return c.podDir, true
		}
	}
	return "", false
}

// observePod records a new reading of a pod's memory.events.local.
func (t *tracker) observePod(podDir string, ev cgroup.MemoryEvents, now time.Time) {
	p, ok := t.pods[podDir]
	if !ok {
		return
	}
	if ev.OOM < p.last.OOM {
		// The counter went backwards: the cgroup was recreated. Start over.
		p.last, p.ooms = ev, pending{}
		return
	}
	p.ooms.add(ev.OOM-p.last.OOM, now)
	p.last = ev
}

// observeContainer records a new reading of a container's memory.events.local and returns
// the event for its new kills, if any. Callers observe the pod's file first (see Watcher),
// since the pod's notification may be delayed behind the container's.
func (t *tracker) observeContainer(key string, ev cgroup.MemoryEvents, now time.Time) (Event, bool) {
	c, ok := t.containers[key]
	if !ok {
		return Event{}, false
	}
	if ev.OOM < c.last.OOM || ev.OOMKill < c.last.OOMKill {
		c.last, c.ooms = ev, pending{}
		return Event{}, false
	}
	c.ooms.add(ev.OOM-c.last.OOM, now)
	kills := ev.OOMKill - c.last.OOMKill
	c.last = ev
	if kills == 0 {
		return Event{}, false
	}
	kind := KindNode
	if c.ooms.take(kills, now, t.ttl) {
		kind = KindContainer
		c.ooms = pending{} // every recent own OOM belongs to this burst
	} else if p := t.pods[c.podDir]; p != nil && p.ooms.take(kills, now, t.ttl) {
		kind = KindPod
	}
	return Event{Key: key, Dir: c.dir, Kind: kind, Count: kills, Time: now}, true
}
