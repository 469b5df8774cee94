package recommend

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Means, standard deviations and cvs are sums of a few float64 operations; 1e-12 relative
// tolerance only absorbs their rounding.
var approx = cmpopts.EquateApprox(1e-12, 0)

func TestStatsOf(t *testing.T) {
	now := t0.Add(time.Hour)
	cases := map[string]struct {
		d    Distribution
		want Stats
	}{
		"nil distribution is all zeros": {
			d:    nil,
			want: Stats{LastUpdated: now},
		},
		"empty distribution is all zeros with a 0 time span": {
			d:    newFakeDistribution(t0, t0.Add(time.Hour)),
			want: Stats{LastUpdated: now},
		},
		"one sample": {
			d: newFakeDistribution(t0, t0, 240),
			want: Stats{Samples: 1, P50: 240, P75: 240, P90: 240, P95: 240, P99: 240, Max: 240,
				Sum: 240, Mean: 240, LastUpdated: now},
		},
		"one to ten: nearest ranks and population deviation": {
			d: newFakeDistribution(t0, t0.Add(90*time.Minute), 10, 9, 8, 7, 6, 5, 4, 3, 2, 1),
			want: Stats{Samples: 10, TimeSpan: 90 * time.Minute,
				P50: 5, P75: 8, P90: 9, P95: 10, P99: 10, Max: 10,
				Sum: 55, Mean: 5.5, StdDev: math.Sqrt(8.25), CV: math.Sqrt(8.25) / 5.5, LastUpdated: now},
		},
		"constant series has no spread": {
			d: fakeSeries(1000, t0, 24*time.Hour, constant(240)),
			want: Stats{Samples: 1000, TimeSpan: 24 * time.Hour, P50: 240, P75: 240, P90: 240, P95: 240,
				P99: 240, Max: 240, Sum: 240000, Mean: 240, LastUpdated: now},
		},
		"negative variance from float error is clamped to 0": {
			d: &sumsDistribution{fakeDistribution: *newFakeDistribution(t0, t0, 0.1, 0.1, 0.1),
				sum: 0.30000000000000004, sumSquares: 0.029999999999999995},
			want: Stats{Samples: 3, P50: 0.1, P75: 0.1, P90: 0.1, P95: 0.1, P99: 0.1, Max: 0.1,
				Sum: 0.30000000000000004, Mean: 0.30000000000000004 / 3, LastUpdated: now},
		},
		"mean 0 gives cv 0": {
			d:    newFakeDistribution(t0, t0.Add(time.Minute), 0, 0),
			want: Stats{Samples: 2, TimeSpan: time.Minute, LastUpdated: now},
		},
		"last seen before first seen gives a 0 time span": {
			d: newFakeDistribution(t0.Add(time.Minute), t0, 5),
			want: Stats{Samples: 1, P50: 5, P75: 5, P90: 5, P95: 5, P99: 5, Max: 5, Sum: 5, Mean: 5,
				LastUpdated: now},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := StatsOf(tc.d, now)
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("StatsOf (-want +got):\n%s", diff)
			}
		})
	}
}

// The fake is the reference for nearest rank (SPEC §4.2): rank = ceil(p/100 × n) clamped to
// [1, n], no interpolation.
func TestNearestRank(t *testing.T) {
	seq := func(n int) *fakeDistribution {
		return fakeSeries(n, t0, 0, func(i int) float64 { return float64(i + 1) }) // x_i = i
	}
	cases := map[string]struct {
		n    int
		p    float64
		want float64
	}{
		"n=10 p90 is x9":            {n: 10, p: 90, want: 9},
		"n=10 p50 is x5":            {n: 10, p: 50, want: 5},
		"n=10 p75 rounds up to x8":  {n: 10, p: 75, want: 8},
		"n=10 p95 rounds up to x10": {n: 10, p: 95, want: 10},
		"n=10 p99 is x10":           {n: 10, p: 99, want: 10},
		"n=1 any p is x1":           {n: 1, p: 50, want: 1},
		"n=3 p50 is x2":             {n: 3, p: 50, want: 2},
		"n=20 p95 is x19":           {n: 20, p: 95, want: 19},
		"n=100 p99 is x99":          {n: 100, p: 99, want: 99},
		"n=101 p99 is x100":         {n: 101, p: 99, want: 100},
		"n=10 p0.5 clamps to x1":    {n: 10, p: 0.5, want: 1},
		"n=10 p100 is xn":           {n: 10, p: 100, want: 10},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := seq(tc.n).Quantile(tc.p); got != tc.want {
				t.Errorf("Quantile(%v) over 1..%d = %v, want %v", tc.p, tc.n, got, tc.want)
			}
		})
	}
}

func TestAggregate(t *testing.T) {
	s := Stats{P50: 1, P75: 2, P90: 3, P95: 4, P99: 5, Max: 6, Mean: 7}
	want := map[string]float64{"p50": 1, "p75": 2, "p90": 3, "p95": 4, "p99": 5, "max": 6, "avg": 7}
	for agg, w := range want {
		if got, ok := s.Aggregate(agg); !ok || got != w {
			t.Errorf("Aggregate(%q) = %v, %v; want %v, true", agg, got, ok, w)
		}
	}
	for _, agg := range []string{"", "mean", "P50", "p100"} {
		if _, ok := s.Aggregate(agg); ok {
			t.Errorf("Aggregate(%q) ok, want unknown", agg)
		}
	}
}
