package resizeplan

import (
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

// reading is a 10 s PSI reading ending at t0 + end seconds with pct percent stalled.
func reading(end int, pct float64) series.PressureReading {
	t0 := time.Unix(1_800_000_000, 0)
	return series.PressureReading{Container: "app", Pod: "shop/web", At: t0.Add(time.Duration(end) * time.Second),
		Interval: 10 * time.Second, StallPerSec: int64(pct * series.StallScale / 100), Source: series.PressureSourcePSI}
}

func TestPressureTracker(t *testing.T) {
	type step struct {
		r           series.PressureReading
		wantChanged bool
	}
	cases := map[string]struct {
		steps []step
		// wantCovered is the run's length after the steps (0: no run); wantSustained
		// whether it reaches the 30 s sustain (the controller's default, as the 10 % threshold).
		wantCovered   time.Duration
		wantSustained bool
		wantMean      float64
	}{
		"three back-to-back readings at 20% are 30s sustained": {
			steps:       []step{{reading(10, 20), true}, {reading(20, 20), true}, {reading(30, 20), true}},
			wantCovered: 30 * time.Second, wantSustained: true, wantMean: 0.20,
		},
		"two readings are not enough": {
			steps:       []step{{reading(10, 50), true}, {reading(20, 50), true}},
			wantCovered: 20 * time.Second,
		},
		"exactly the threshold counts": {
			steps:       []step{{reading(10, 10), true}, {reading(20, 10), true}, {reading(30, 10), true}},
			wantCovered: 30 * time.Second, wantSustained: true, wantMean: 0.10,
		},
		"a reading below the threshold ends the run": {
			steps: []step{{reading(10, 40), true}, {reading(20, 40), true}, {reading(30, 5), true}},
		},
		"a missing interval (below the agent's floor) starts a new run": {
			steps:       []step{{reading(10, 40), true}, {reading(20, 40), true}, {reading(40, 40), true}, {reading(50, 40), true}},
			wantCovered: 20 * time.Second,
		},
		"a late reading within half an interval still joins": {
			steps:       []step{{reading(10, 30), true}, {reading(24, 30), true}, {reading(34, 30), true}},
			wantCovered: 34 * time.Second, wantSustained: true,
		},
		"a duplicate or older reading changes nothing": {
			steps:       []step{{reading(10, 30), true}, {reading(20, 30), true}, {reading(20, 90), false}, {reading(15, 90), false}},
			wantCovered: 20 * time.Second,
		},
		"calm readings without a run change nothing": {
			steps: []step{{reading(10, 2), false}, {reading(20, 9), false}},
		},
		"mean is time-weighted": {
			steps:       []step{{reading(10, 10), true}, {reading(20, 30), true}, {reading(30, 50), true}},
			wantCovered: 30 * time.Second, wantSustained: true, wantMean: 0.30,
		},
	}
	k := RunKey{UID: "u1", Container: "app"}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := NewPressureTracker(0.10, 30*time.Second)
			for i, s := range tc.steps {
				if got := tr.Observe(k, s.r); got != s.wantChanged {
					t.Errorf("step %d: changed = %v, want %v", i, got, s.wantChanged)
				}
			}
			run := tr.runs[k]
			var covered time.Duration
			if run != nil {
				covered = run.Covered()
			}
			if covered != tc.wantCovered {
				t.Errorf("covered %v, want %v", covered, tc.wantCovered)
			}
			got, ok := tr.Sustained(k)
			if ok != tc.wantSustained {
				t.Errorf("sustained = %v, want %v", ok, tc.wantSustained)
			}
			// Stall shares are whole µs per s: the mean is exact to 1e-6.
			if ok && tc.wantMean != 0 && (got.Mean() < tc.wantMean-1e-6 || got.Mean() > tc.wantMean+1e-6) {
				t.Errorf("mean %v, want %v", got.Mean(), tc.wantMean)
			}
		})
	}
}

// After a raise the run starts over from the raise: readings that began before it do not
// count, so the next raise needs another full sustain period.
func TestPressureTrackerRestart(t *testing.T) {
	tr := NewPressureTracker(0.10, 30*time.Second)
	k, other := RunKey{UID: "u1", Container: "app"}, RunKey{UID: "u2", Container: "app"}
	for _, end := range []int{10, 20, 30} {
		tr.Observe(k, reading(end, 60))
		tr.Observe(other, reading(end, 60))
	}
	if _, ok := tr.Sustained(k); !ok {
		t.Fatal("no sustained run")
	}
	tr.Restart(k, reading(35, 0).At)
	if tr.Observe(k, reading(40, 60)) {
		t.Error("a reading that began before the raise counted")
	}
	for _, end := range []int{50, 60} {
		tr.Observe(k, reading(end, 60))
	}
	if run, ok := tr.Sustained(k); ok {
		t.Errorf("sustained with 20s of readings after the raise: %+v", run)
	}
	tr.Observe(k, reading(70, 60))
	if run, ok := tr.Sustained(k); !ok || run.Covered() != 30*time.Second || !run.Start.Equal(reading(40, 0).At) {
		t.Errorf("after three readings begun after the raise: %+v %v, want the 30s run from 40s", run, ok)
	}
	if _, ok := tr.Sustained(other); !ok {
		t.Error("the other pod's run was touched")
	}
	tr.Prune(reading(70, 0).At.Add(15*time.Minute+time.Second), 15*time.Minute)
	if len(tr.runs) != 0 || len(tr.after) != 0 {
		t.Errorf("prune left %d runs, %d marks", len(tr.runs), len(tr.after))
	}
}
