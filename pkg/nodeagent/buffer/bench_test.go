package buffer

import (
	"fmt"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

// linearEnforce is the drop loop the buffer had before the heap, kept here only as the
// baseline of BenchmarkDropOnReturn: every drop scans the whole tier for its oldest entry.
func linearEnforce(b *Buffer, t *tier) {
	for len(t.entries) > t.max {
		var victim *entry
		for _, e := range t.entries {
			if victim == nil || e.k.start < victim.k.start || (e.k.start == victim.k.start && e.seq < victim.seq) {
				victim = e
			}
		}
		b.removeLocked(t, victim.k, DropFull)
	}
}

// fullBuffer returns a buffer holding limit filed windows (series × 5-minute windows)
// and, taken out of it as a failed flush would, the oldest `taken` of them.
func fullBuffer(limit, taken int) (*Buffer, []series.WindowUpdate) {
	b := New(5*time.Minute, Limits{Filed: limit, Pending: 1})
	const perWindow = 100 // series per window
	for i := range limit {
		s := Series{Container: fmt.Sprintf("c%d", i%perWindow), Resource: series.ResourceCPU, Signal: series.SignalUsage}
		_ = b.Add(hash, "", s, 1, t0.Add(time.Duration(i/perWindow)*5*time.Minute))
	}
	ups := b.Take(taken)
	// New windows arrive meanwhile and fill the buffer again.
	for i := range taken {
		s := Series{Container: fmt.Sprintf("n%d", i), Resource: series.ResourceMemory, Signal: series.SignalUsage}
		_ = b.Add(hash, "", s, 1, t0.Add(time.Duration(limit/perWindow+1)*5*time.Minute))
	}
	return b, ups
}

// BenchmarkDropOnReturn gives 5,000 windows of a failed flush back to a full 20,000-window
// buffer, which then drops 5,000 windows under its lock: the linear scan per drop (before)
// against the heap (after), in one run.
func BenchmarkDropOnReturn(bm *testing.B) {
	const limit, drops = 20000, 5000
	for name, enforce := range map[string]func(*Buffer, *tier){
		"before=linear-scan": linearEnforce,
		"after=heap":         func(b *Buffer, t *tier) { b.enforceLocked(t) },
	} {
		bm.Run(name, func(bm *testing.B) {
			for bm.Loop() {
				bm.StopTimer()
				b, ups := fullBuffer(limit, drops)
				bm.StartTimer()
				b.mu.Lock()
				for _, u := range ups {
					k := key{hash: u.Series.Profile, s: Series{u.Series.Container, u.Series.Resource, u.Series.Signal}, start: u.Start.Unix()}
					b.entryLocked(b.filed, k).h.Merge(u.Hist)
				}
				enforce(b, b.filed)
				b.mu.Unlock()
				if got := b.Stats().Dropped[DropFull]; got != drops {
					bm.Fatalf("dropped %d, want %d", got, drops)
				}
			}
		})
	}
}

// The heap drops exactly the windows the linear scan drops, whatever the order of adds,
// takes and returns.
func TestHeapDropsWhatTheScanDrops(t *testing.T) {
	for seed := range 20 {
		heapB, scanB := New(5*time.Minute, Limits{Filed: 50, Pending: 1}), New(5*time.Minute, Limits{Filed: 50, Pending: 1})
		x := uint64(seed*7919 + 1)
		next := func(n int) int { x = x*6364136223846793005 + 1442695040888963407; return int(x>>33) % n }
		for step := range 400 {
			s := Series{Container: fmt.Sprintf("c%d", next(30)), Resource: series.ResourceCPU, Signal: series.SignalUsage}
			at := t0.Add(time.Duration(step/20+next(3)) * 5 * time.Minute)
			_ = heapB.Add(hash, "", s, 1, at)
			scanB.mu.Lock()
			k := key{hash: hash, s: s, start: series.WindowStart(at, scanB.window).Unix()}
			_ = scanB.entryLocked(scanB.filed, k).h.Add(1, at)
			linearEnforce(scanB, scanB.filed)
			scanB.mu.Unlock()
			if next(10) == 0 {
				n := next(20)
				heapB.Return(heapB.Take(n))
				ups := scanB.Take(n)
				scanB.mu.Lock()
				for _, u := range ups {
					k := key{hash: u.Series.Profile, s: Series{u.Series.Container, u.Series.Resource, u.Series.Signal}, start: u.Start.Unix()}
					scanB.entryLocked(scanB.filed, k).h.Merge(u.Hist)
				}
				linearEnforce(scanB, scanB.filed)
				scanB.mu.Unlock()
			}
		}
		if got, want := summarize(heapB.Take(0)), summarize(scanB.Take(0)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: heap kept %v\nscan kept %v", seed, got, want)
		}
	}
}
