package series

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// hist builds a histogram from samples taken one second apart starting at t0.
func hist(t *testing.T, xs ...float64) *Histogram {
	t.Helper()
	h := &Histogram{}
	for i, x := range xs {
		if err := h.Add(x, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func TestRank(t *testing.T) {
	cases := map[string]struct {
		p    float64
		n    int64
		want int64
	}{
		"spec example p90 of 10": {90, 10, 9},
		"p50 of 10":              {50, 10, 5},
		"p50 of 11":              {50, 11, 6},
		"p99 of 10":              {99, 10, 10},
		"p95 of 20":              {95, 20, 19},
		"p100":                   {100, 7, 7},
		"above 100 clamps":       {250, 7, 7},
		"tiny p is rank 1":       {0.001, 7, 1},
		"zero p clamps to 1":     {0, 7, 1},
		"negative p clamps":      {-5, 7, 1},
		"nan p is rank 1":        {math.NaN(), 7, 1},
		"fractional p":           {99.9, 1000, 999},
		"empty":                  {50, 0, 0},
		"one sample":             {1, 1, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Rank(tc.p, tc.n); got != tc.want {
				t.Errorf("Rank(%v, %d) = %d, want %d", tc.p, tc.n, got, tc.want)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	cases := map[string]struct {
		xs   []float64
		p    float64
		want float64
	}{
		"empty": {nil, 50, 0},
		"p90 of 1..10 is 9's bucket edge": {
			[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, BucketUpper(BucketIndex(9)),
		},
		"p100 is the exact max": {[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 100, 10},
		"capped at max":         {[]float64{1000.5, 1000.5}, 50, 1000.5},
		"zeros":                 {[]float64{0, 0, 0, 5}, 75, 0},
		"edge value is exact":   {[]float64{1024, 1024}, 50, 1024},
		"single":                {[]float64{37}, 1, 37},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := hist(t, tc.xs...)
			if got := h.Quantile(tc.p); got != tc.want {
				t.Errorf("Quantile(%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestAdd(t *testing.T) {
	h := hist(t, 3, 0, 7)
	want := &Histogram{
		Buckets: map[int32]int64{BucketIndex(3): 1, ZeroBucket: 1, BucketIndex(7): 1},
		N:       3, Total: 10, TotalSquares: 58, Lo: 0, Hi: 7,
		FirstUnix: t0.Unix(), LastUnix: t0.Unix() + 2,
	}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("after adding 3, 0, 7 (-want +got):\n%s", diff)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := h.Add(bad, t0); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("Add(%v) = %v, want ErrInvalidValue", bad, err)
		}
	}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("a rejected sample changed the histogram (-want +got):\n%s", diff)
	}
	if !h.FirstSeen().Equal(t0) || !h.LastSeen().Equal(t0.Add(2*time.Second)) {
		t.Errorf("seen %v..%v, want %v..%v", h.FirstSeen(), h.LastSeen(), t0, t0.Add(2*time.Second))
	}
	var empty Histogram
	if !empty.FirstSeen().IsZero() || !empty.LastSeen().IsZero() || empty.Max() != 0 || empty.Quantile(50) != 0 || empty.Quantiles(50)[0] != 0 {
		t.Errorf("empty histogram reports data: %+v", empty)
	}
}

// distributions are sample generators the property tests run over. Values are cpu
// millicores or bytes, so every one of them is ≥ 0; several are whole numbers as the agent
// writes them.
var distributions = map[string]func(r *rand.Rand) float64{
	"uniform cpu millicores":   func(r *rand.Rand) float64 { return math.Round(r.Float64() * 4000) },
	"lognormal cpu millicores": func(r *rand.Rand) float64 { return math.Round(200 * math.Exp(0.5*r.NormFloat64())) },
	"lognormal memory bytes":   func(r *rand.Rand) float64 { return math.Round(300e6 * math.Exp(0.3*r.NormFloat64())) },
	"bimodal": func(r *rand.Rand) float64 {
		if r.IntN(3) == 0 {
			return 2000 + 50*r.NormFloat64()*0.1
		}
		return 100 + r.Float64()*5
	},
	"constant":              func(r *rand.Rand) float64 { return 256 << 20 },
	"heavy tail (pareto)":   func(r *rand.Rand) float64 { return 10 / math.Pow(1-r.Float64(), 1/1.1) },
	"tiny fractions":        func(r *rand.Rand) float64 { return r.Float64() * 1e-6 },
	"huge bytes":            func(r *rand.Rand) float64 { return math.Round(1e15 * math.Exp(2*r.NormFloat64())) },
	"mostly idle with 0s":   func(r *rand.Rand) float64 { return math.Max(0, math.Round(30*r.NormFloat64())) },
	"powers of two (edges)": func(r *rand.Rand) float64 { return math.Ldexp(1, r.IntN(60)) },
}

// TestQuantileProperty checks SPEC §4.2 for histograms over many random distributions and
// sample counts: every percentile is at least the exact nearest-rank sample and at most
// 2 % above it. Tolerance: the bucket resolution, GrowthRatio − 1 ≈ 1.94 % < 2 %; there is
// no other error because the edges are exact and the result is capped at the exact max.
func TestQuantileProperty(t *testing.T) {
	percentiles := []float64{0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100}
	for name, gen := range distributions {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(len(name))))
			for trial := 0; trial < 40; trial++ {
				n := 1 + r.IntN(3000)
				if trial < 5 {
					n = trial + 1
				}
				xs := make([]float64, n)
				h := &Histogram{}
				for i := range xs {
					xs[i] = gen(r)
					if err := h.Add(xs[i], t0.Add(time.Duration(r.IntN(86400))*time.Second)); err != nil {
						t.Fatal(err)
					}
				}
				slices.Sort(xs)
				if h.Count() != int64(n) || h.Max() != xs[n-1] || h.Min() != xs[0] {
					t.Fatalf("n=%d: count %d max %v min %v, want %d %v %v", n, h.Count(), h.Max(), h.Min(), n, xs[n-1], xs[0])
				}
				all := h.Quantiles(percentiles...)
				for j, p := range percentiles {
					exact := xs[Rank(p, int64(n))-1]
					got := h.Quantile(p)
					if got < exact || got > exact*1.02 {
						t.Fatalf("n=%d p%v = %v, exact nearest rank %v: outside [exact, exact×1.02]", n, p, got, exact)
					}
					if all[j] != got {
						t.Fatalf("n=%d: Quantiles gives p%v = %v, Quantile %v", n, p, all[j], got)
					}
				}
			}
		})
	}
}

// TestMergeOrderIndependent splits random samples into parts, merges the parts in many
// orders and groupings, and compares with one histogram fed every sample. Bucket counts,
// count, extremes and times must match exactly. The float sums must match to 1e-12
// relative: float addition rounds (2^-53 per step, a few hundred steps here), so only
// samples whose sums stay whole numbers below 2^53 — checked exactly below — add up
// bit-identically in every order.
func TestMergeOrderIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	exactRuns := 0
	for name, gen := range distributions {
		t.Run(name, func(t *testing.T) {
			parts := make([]*Histogram, 6)
			all := &Histogram{}
			for i := range parts {
				parts[i] = &Histogram{}
				for k := 0; k < 1+r.IntN(60); k++ {
					v, at := gen(r), t0.Add(time.Duration(r.IntN(3600))*time.Second)
					_ = parts[i].Add(v, at)
					_ = all.Add(v, at)
				}
			}
			exact := all.TotalSquares < 1<<53 && all.Total == math.Trunc(all.Total) && all.TotalSquares == math.Trunc(all.TotalSquares)
			if exact {
				exactRuns++
			}
			for trial := 0; trial < 20; trial++ {
				perm := r.Perm(len(parts))
				left, right := &Histogram{}, &Histogram{}
				cut := r.IntN(len(parts) + 1)
				for k, p := range perm {
					if k < cut {
						left.Merge(parts[p])
					} else {
						right.Merge(parts[p])
					}
				}
				left.Merge(right)
				opts := cmp.Options{}
				if !exact {
					opts = append(opts, cmpopts.EquateApprox(1e-12, 0))
				}
				if diff := cmp.Diff(all, left, opts...); diff != "" {
					t.Fatalf("merge order %v cut %d differs (-one pass +merged):\n%s", perm, cut, diff)
				}
				if !cmp.Equal(all.Buckets, left.Buckets) || all.Lo != left.Lo || all.Hi != left.Hi || all.N != left.N {
					t.Fatalf("merge order %v cut %d: buckets, count or extremes differ", perm, cut)
				}
			}
		})
	}
	if exactRuns < 3 {
		t.Errorf("only %d distributions had whole-number sums below 2^53; the exact comparison is not exercised", exactRuns)
	}
}

func TestMergeEmpty(t *testing.T) {
	h := hist(t, 5, 6)
	want := h.Clone()
	h.Merge(&Histogram{})
	h.Merge(nil)
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("merging empty histograms changed it (-want +got):\n%s", diff)
	}
	var e Histogram
	e.Merge(h)
	if diff := cmp.Diff(want, &e); diff != "" {
		t.Errorf("merging into an empty histogram (-want +got):\n%s", diff)
	}
	e.Buckets[BucketIndex(5)] = 99
	if h.Buckets[BucketIndex(5)] != 1 {
		t.Error("Merge shares the bucket map of its argument")
	}
}
