package resize

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Defaults of the pressure fast raise (ballast-control --pressure-raise-threshold and
// --pressure-raise-sustain).
const (
	// DefaultPressureThreshold: 10 % of the time stalled on memory.
	DefaultPressureThreshold = 0.10
	// DefaultPressureSustain: for at least 30 s without a break.
	DefaultPressureSustain = 30 * time.Second
)

// runKey names one container of one pod (the UID tells a re-created pod apart).
type runKey struct {
	uid       types.UID
	container string
}

// pressureRun is an unbroken stretch of readings at or above the threshold.
type pressureRun struct {
	start, end time.Time
	// stalled is Σ stall × interval over the run, for its mean; peak the highest reading.
	stalled   time.Duration
	peak      int64
	source    string
	readings  int
	lastAdded time.Time // At of the newest reading
}

// covered is how long the run lasts.
func (r *pressureRun) covered() time.Duration { return r.end.Sub(r.start) }

// mean is the run's time-weighted stall share (0 … 1).
func (r *pressureRun) mean() float64 {
	if d := r.covered(); d > 0 {
		return float64(r.stalled) / float64(d)
	}
	return 0
}

// pressureTracker turns a container's pressure readings into runs: a run grows while
// readings at or above the threshold follow each other without a gap, and ends at a
// reading below it or at a gap (the agent writes nothing below series.PressureFloor, so a
// missing interval is a calm one). It is pure: times come from the readings and callers.
type pressureTracker struct {
	threshold int64 // µs per s
	sustain   time.Duration
	runs      map[runKey]*pressureRun
	// after ignores readings that began before this time (a raise was sent, or a raise
	// was refused for good, at that time).
	after map[runKey]time.Time
}

func newPressureTracker(threshold float64, sustain time.Duration) *pressureTracker {
	return &pressureTracker{threshold: int64(threshold * series.StallScale), sustain: sustain,
		runs: map[runKey]*pressureRun{}, after: map[runKey]time.Time{}}
}

// gapTolerance is how far apart two readings may be and still count as adjacent: the
// agent's intervals are back to back, so half an interval absorbs any jitter.
func gapTolerance(iv time.Duration) time.Duration { return max(iv/2, time.Second) }

// observe adds one reading of k. It reports whether the run of k changed.
func (t *pressureTracker) observe(k runKey, r series.PressureReading) bool {
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
	if run == nil || r.Start().After(run.end.Add(gapTolerance(r.Interval))) {
		run = &pressureRun{start: r.Start()}
		t.runs[k] = run
	}
	run.end, run.lastAdded = r.At, r.At
	run.stalled += time.Duration(float64(r.Interval) * r.Fraction())
	run.peak = max(run.peak, r.StallPerSec)
	run.source = r.Source
	run.readings++
	return true
}

// sustained returns k's run when it has lasted at least the sustain period.
func (t *pressureTracker) sustained(k runKey) (*pressureRun, bool) {
	run := t.runs[k]
	if run == nil || run.covered() < t.sustain {
		return nil, false
	}
	return run, true
}

// restart forgets k's run and ignores readings that began before at.
func (t *pressureTracker) restart(k runKey, at time.Time) {
	delete(t.runs, k)
	t.after[k] = at
}

// prune forgets runs that ended, and raise marks, older than keep before now.
func (t *pressureTracker) prune(now time.Time, keep time.Duration) {
	for k, r := range t.runs {
		if now.Sub(r.end) > keep {
			delete(t.runs, k)
		}
	}
	for k, a := range t.after {
		if now.Sub(a) > keep {
			delete(t.after, k)
		}
	}
}
