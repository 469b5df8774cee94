package resizeplan

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ballastk8s/ballast/pkg/series"
)

// RunKey names one container of one pod (the UID tells a re-created pod apart).
type RunKey struct {
	UID       types.UID
	Container string
}

// PressureRun is an unbroken stretch of readings at or above the threshold.
type PressureRun struct {
	Start, End time.Time
	// Stalled is Σ stall × interval over the run, for its mean; Peak the highest reading
	// (µs per s), Source the newest reading's source.
	Stalled   time.Duration
	Peak      int64
	Source    string
	Readings  int
	lastAdded time.Time // At of the newest reading
}

// Covered is how long the run lasts.
func (r *PressureRun) Covered() time.Duration { return r.End.Sub(r.Start) }

// Mean is the run's time-weighted stall share (0 … 1).
func (r *PressureRun) Mean() float64 {
	if d := r.Covered(); d > 0 {
		return float64(r.Stalled) / float64(d)
	}
	return 0
}

// PressureTracker turns a container's pressure readings into runs: a run grows while
// readings at or above the threshold follow each other without a gap, and ends at a
// reading below it or at a gap (the agent writes nothing below series.PressureFloor, so a
// missing interval is a calm one). It is pure: times come from the readings and callers.
type PressureTracker struct {
	threshold int64 // µs per s
	sustain   time.Duration
	runs      map[RunKey]*PressureRun
	// after ignores readings that began before this time (a raise was sent, or a raise
	// was refused for good, at that time).
	after map[RunKey]time.Time
}

func NewPressureTracker(threshold float64, sustain time.Duration) *PressureTracker {
	return &PressureTracker{threshold: int64(threshold * series.StallScale), sustain: sustain,
		runs: map[RunKey]*PressureRun{}, after: map[RunKey]time.Time{}}
}

// gapTolerance is how far apart two readings may be and still count as adjacent: the
// agent's intervals are back to back, so half an interval absorbs any jitter.
func gapTolerance(iv time.Duration) time.Duration { return max(iv/2, time.Second) }

// Observe adds one reading of k. It reports whether the run of k changed.
func (t *PressureTracker) Observe(k RunKey, r series.PressureReading) bool {
	if a, ok := t.after[k]; ok && r.Start().Before(a) {
		return false
	}
	run := t.runs[k]
	if run != nil && !r.At.After(run.lastAdded) {
		return false // a duplicate or an older reading
	}
	if r.StallPerSec < t.threshold {
		if run != nil {
			delete(t.runs, k)
			return true
		}
		return false
	}
	if run == nil || r.Start().After(run.End.Add(gapTolerance(r.Interval))) {
		run = &PressureRun{Start: r.Start()}
		t.runs[k] = run
	}
	run.End, run.lastAdded = r.At, r.At
	run.Stalled += time.Duration(float64(r.Interval) * r.Fraction())
	run.Peak = max(run.Peak, r.StallPerSec)
	run.Source = r.Source
	run.Readings++
	return true
}

// Sustained returns k's run when it has lasted at least the sustain period.
func (t *PressureTracker) Sustained(k RunKey) (*PressureRun, bool) {
	run := t.runs[k]
	if run == nil || run.Covered() < t.sustain {
		return nil, false
	}
	return run, true
}

// Restart forgets k's run and ignores readings that began before at.
func (t *PressureTracker) Restart(k RunKey, at time.Time) {
	delete(t.runs, k)
	t.after[k] = at
}

// Prune forgets runs that ended, and raise marks, older than keep before now.
func (t *PressureTracker) Prune(now time.Time, keep time.Duration) {
	for k, r := range t.runs {
		if now.Sub(r.End) > keep {
			delete(t.runs, k)
		}
	}
	for k, a := range t.after {
		if now.Sub(a) > keep {
			delete(t.after, k)
		}
	}
}
