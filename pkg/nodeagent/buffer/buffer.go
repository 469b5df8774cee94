// Package buffer is ballast-node's local aggregation: samples are added into per-window
// histograms (pkg/series) keyed by series and window start, so what waits for the next
// flush grows with the number of active series and windows, never with the sample rate.
//
// Entries are either filed (under a profile's measurementHash, ready to flush) or pending
// (under a pod UID, for pods without a profile-ref yet or whose profile has no hash yet;
// File moves them under the hash once it is known). Both tiers are bounded by a number of
// windows; when one is full the oldest window is dropped first and every drop is counted
// by reason. The package is pure: times are passed in.
package buffer

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Drop reasons, the reason label of ballast_node_buffer_dropped_total.
const (
	// DropFull: the filed tier was full (Valkey unreachable for long); oldest window dropped.
	DropFull = "buffer_full"
	// DropPendingFull: the pending tier was full (pods unstamped for long).
	DropPendingFull = "pending_full"
	// DropUnbound: the pod left the node before it was bound to a profile with a hash.
	DropUnbound = "unbound"
	// DropExpired: the window fell out of the retention window before it could be written.
	DropExpired = "expired"
	// DropRejected: the store rejected the window as invalid (it would fail every retry).
	DropRejected = "rejected"
)

// Series names a series within its owner (profile or pending pod).
type Series struct {
	// Container is "" for the pod-level series.
	Container, Resource, Signal string
}

type key struct {
	hash, pod string // exactly one is set
	s         Series
	start     int64 // window start, unix seconds
}

type entry struct {
	k   key
	h   *series.Histogram
	seq uint64 // insertion order, to drop the oldest entry of the oldest window first
	idx int    // position in tier.order
}

// tier is one bounded set of entries. order is a min-heap of the entries by (window
// start, seq): the next one to drop is at its root, so a drop costs O(log n) and never a
// scan of the tier (a full buffer drops on every new window).
type tier struct {
	max     int
	entries map[key]*entry
	order   dropOrder
}

func newTier(max int) *tier {
	return &tier{max: max, entries: map[key]*entry{}}
}

// dropOrder implements heap.Interface over entries, oldest window and oldest entry first.
type dropOrder []*entry

func (o dropOrder) Len() int { return len(o) }
func (o dropOrder) Less(i, j int) bool {
	if o[i].k.start != o[j].k.start {
		return o[i].k.start < o[j].k.start
	}
	return o[i].seq < o[j].seq
}
func (o dropOrder) Swap(i, j int) {
	o[i], o[j] = o[j], o[i]
	o[i].idx, o[j].idx = i, j
}
func (o *dropOrder) Push(x any) {
	e := x.(*entry)
	e.idx = len(*o)
	*o = append(*o, e)
}
func (o *dropOrder) Pop() any {
	old := *o
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*o = old[:len(old)-1]
	e.idx = -1
	return e
}

// Limits bound the two tiers, in windows (one window = one series × one window width).
type Limits struct {
	Filed, Pending int
}

// Buffer holds histograms waiting to be written. Safe for concurrent use.
type Buffer struct {
	mu      sync.Mutex
	window  time.Duration
	seq     uint64
	filed   *tier
	pending *tier
	dropped map[string]int64
	// droppedSamples counts the samples in dropped windows, by reason.
	droppedSamples map[string]int64
}

// New returns a buffer for windows of width window (series.Layout.Window).
func New(window time.Duration, lim Limits) *Buffer {
	return &Buffer{window: window, filed: newTier(max(lim.Filed, 1)), pending: newTier(max(lim.Pending, 1)),
		dropped: map[string]int64{}, droppedSamples: map[string]int64{}}
}

// SetWindow sets the width of the windows later samples go into (the layout follows
// BallastConfig's retentionWindow); windows already held keep theirs.
func (b *Buffer) SetWindow(window time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.window = window
}

// Add records sample v of series s taken at at: under hash when it is known, else pending
// under pod. It returns series.ErrInvalidValue (wrapped) for a value no histogram takes.
func (b *Buffer) Add(hash, pod string, s Series, v float64, at time.Time) error {
	if err := series.CheckValue(v); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := key{hash: hash, s: s, start: series.WindowStart(at, b.window).Unix()}
	t := b.filed
	if hash == "" {
		k.pod, t = pod, b.pending
	}
	e := b.entryLocked(t, k)
	_ = e.h.Add(v, at) // checked above
	b.enforceLocked(t)
	return nil
}

// entryLocked returns k's entry in t, creating it.
func (b *Buffer) entryLocked(t *tier, k key) *entry {
	if e, ok := t.entries[k]; ok {
		return e
	}
	b.seq++
	e := &entry{k: k, h: &series.Histogram{}, seq: b.seq}
	t.entries[k] = e
	heap.Push(&t.order, e)
	return e
}

// enforceLocked drops the oldest entries of t until it fits: the oldest window first, in
// it the entry created first. Each drop pops the heap's root.
func (b *Buffer) enforceLocked(t *tier) {
	reason := DropFull
	if t == b.pending {
		reason = DropPendingFull
	}
	for len(t.entries) > t.max {
		b.removeLocked(t, t.order[0].k, reason)
	}
}

func (b *Buffer) removeLocked(t *tier, k key, reason string) {
	e, ok := t.entries[k]
	if !ok {
		return
	}
	delete(t.entries, k)
	heap.Remove(&t.order, e.idx)
	if reason != "" {
		b.dropped[reason]++
		b.droppedSamples[reason] += e.h.N
	}
}

// Merged is a count of samples per series moved or dropped.
type Merged map[Series]int64

// File moves the pending entries of pod under hash (merging with what is filed there) and
// returns the number of samples moved per series.
func (b *Buffer) File(pod, hash string) Merged {
	b.mu.Lock()
	defer b.mu.Unlock()
	moved := Merged{}
	for k, e := range b.pending.entries {
		if k.pod != pod {
			continue
		}
		b.removeLocked(b.pending, k, "")
		nk := key{hash: hash, s: k.s, start: k.start}
		b.entryLocked(b.filed, nk).h.Merge(e.h)
		moved[k.s] += e.h.N
	}
	b.enforceLocked(b.filed)
	return moved
}

// Discard drops the pending entries of pod, counted under reason.
func (b *Buffer) Discard(pod, reason string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for k := range b.pending.entries {
		if k.pod == pod {
			b.removeLocked(b.pending, k, reason)
			n++
		}
	}
	return n
}

// PendingPods lists the pods with pending entries, sorted.
func (b *Buffer) PendingPods() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[string]bool{}
	for k := range b.pending.entries {
		seen[k.pod] = true
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Expire drops every window (filed or pending) whose end plus ttl lies before now: the
// store would expire it at once.
func (b *Buffer) Expire(now time.Time, ttl time.Duration) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	cutoff := now.Add(-ttl - b.window).Unix()
	n := 0
	for _, t := range []*tier{b.filed, b.pending} {
		for k := range t.entries {
			if k.start < cutoff {
				b.removeLocked(t, k, DropExpired)
				n++
			}
		}
	}
	return n
}

// Take removes up to max filed windows (all when max ≤ 0), oldest window first, and returns
// them as updates for store.Writer.Flush. Give the ones that failed back with Return.
func (b *Buffer) Take(max int) []series.WindowUpdate {
	b.mu.Lock()
	defer b.mu.Unlock()
	keys := make([]key, 0, len(b.filed.entries))
	for k := range b.filed.entries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	if max > 0 && len(keys) > max {
		keys = keys[:max]
	}
	out := make([]series.WindowUpdate, 0, len(keys))
	for _, k := range keys {
		e := b.filed.entries[k]
		b.removeLocked(b.filed, k, "")
		out = append(out, series.WindowUpdate{
			Series: series.SeriesID{Profile: k.hash, Container: k.s.Container, Resource: k.s.Resource, Signal: k.s.Signal},
			Start:  time.Unix(k.start, 0).UTC(),
			Hist:   e.h,
		})
	}
	return out
}

func compareKeys(a, b key) int {
	return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.hash, b.hash), cmp.Compare(a.s.Container, b.s.Container),
		cmp.Compare(a.s.Resource, b.s.Resource), cmp.Compare(a.s.Signal, b.s.Signal))
}

// Return gives back updates Take returned that were not written; they merge with whatever
// was added since, and count against the bound again (the oldest dropped first).
func (b *Buffer) Return(updates []series.WindowUpdate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range updates {
		k := key{hash: u.Series.Profile, s: Series{u.Series.Container, u.Series.Resource, u.Series.Signal}, start: u.Start.Unix()}
		b.entryLocked(b.filed, k).h.Merge(u.Hist)
	}
	b.enforceLocked(b.filed)
}

// Reject counts updates the store refused as invalid; they are not retried.
func (b *Buffer) Reject(updates []series.WindowUpdate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range updates {
		b.dropped[DropRejected]++
		b.droppedSamples[DropRejected] += u.Hist.N
	}
}

// Stats are the buffer's gauges and counters.
type Stats struct {
	// Filed and Pending are the windows held; Limits their bounds.
	Filed, Pending int
	Limits         Limits
	// Dropped counts dropped windows by reason since the start, DroppedSamples their samples.
	Dropped, DroppedSamples map[string]int64
}

// Stats returns a copy of the buffer's counters.
func (b *Buffer) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{Filed: len(b.filed.entries), Pending: len(b.pending.entries),
		Limits:  Limits{Filed: b.filed.max, Pending: b.pending.max},
		Dropped: map[string]int64{}, DroppedSamples: map[string]int64{}}
	for r, n := range b.dropped {
		s.Dropped[r] = n
	}
	for r, n := range b.droppedSamples {
		s.DroppedSamples[r] = n
	}
	return s
}

// Window is one held window, for the debug view.
type Window struct {
	// Hash is set for a filed window, Pod for a pending one.
	Hash, Pod string
	Series    Series
	Start     time.Time
	Hist      *series.Histogram
}

// Windows returns copies of every held window, sorted by owner, series and start.
func (b *Buffer) Windows() []Window {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Window, 0, len(b.filed.entries)+len(b.pending.entries))
	for _, t := range []*tier{b.filed, b.pending} {
		for k, e := range t.entries {
			out = append(out, Window{Hash: k.hash, Pod: k.pod, Series: k.s, Start: time.Unix(k.start, 0).UTC(), Hist: e.h.Clone()})
		}
	}
	slices.SortFunc(out, func(a, c Window) int {
		return cmp.Or(cmp.Compare(a.Hash, c.Hash), cmp.Compare(a.Pod, c.Pod), cmp.Compare(a.Series.Container, c.Series.Container),
			cmp.Compare(a.Series.Resource, c.Series.Resource), cmp.Compare(a.Series.Signal, c.Series.Signal), a.Start.Compare(c.Start))
	})
	return out
}
