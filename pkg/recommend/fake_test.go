package recommend

import (
	"math"
	"slices"
	"time"
)

// fakeDistribution is an exact Distribution over a sorted slice of samples, the reference
// the store's histogram distributions approximate.
type fakeDistribution struct {
	xs          []float64 // sorted ascending
	first, last time.Time
}

var _ Distribution = (*fakeDistribution)(nil)

// newFakeDistribution holds xs (copied and sorted) seen between first and last.
func newFakeDistribution(first, last time.Time, xs ...float64) *fakeDistribution {
	s := slices.Clone(xs)
	slices.Sort(s)
	return &fakeDistribution{xs: s, first: first, last: last}
}

// fakeSeries is n samples with values value(i), spread evenly over span ending at last.
func fakeSeries(n int, last time.Time, span time.Duration, value func(i int) float64) *fakeDistribution {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = value(i)
	}
	return newFakeDistribution(last.Add(-span), last, xs...)
}

// constant is a value function for fakeSeries.
func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

func (f *fakeDistribution) Count() int64 { return int64(len(f.xs)) }

func (f *fakeDistribution) Sum() float64 {
	var s float64
	for _, x := range f.xs {
		s += x
	}
	return s
}

func (f *fakeDistribution) SumSquares() float64 {
	var s float64
	for _, x := range f.xs {
		s += x * x
	}
	return s
}

func (f *fakeDistribution) Max() float64 {
	if len(f.xs) == 0 {
		return 0
	}
	return f.xs[len(f.xs)-1]
}

// Quantile is the nearest rank ceil(p/100 × n) clamped to [1, n], in integer arithmetic for
// whole p so no rounding can move the rank.
func (f *fakeDistribution) Quantile(p float64) float64 {
	n := int64(len(f.xs))
	if n == 0 {
		return 0
	}
	var rank int64
	if p == math.Trunc(p) {
		rank = (int64(p)*n + 99) / 100
	} else {
		rank = int64(math.Ceil(p / 100 * float64(n)))
	}
	rank = min(max(rank, 1), n)
	return f.xs[rank-1]
}

func (f *fakeDistribution) FirstSeen() time.Time { return f.first }
func (f *fakeDistribution) LastSeen() time.Time  { return f.last }

// sumsDistribution reports given sums, to exercise float error in the variance.
type sumsDistribution struct {
	fakeDistribution
	sum, sumSquares float64
}

func (s *sumsDistribution) Sum() float64        { return s.sum }
func (s *sumsDistribution) SumSquares() float64 { return s.sumSquares }
