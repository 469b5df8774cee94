package series

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Histogram is the distribution of the samples of one series over some time range: sparse
// log-scale bucket counts plus exact count, sums, extremes and sample times. The zero value
// is an empty histogram ready to use.
//
// Invariants (kept by Add and Merge, checked by Decode): N equals the sum of Buckets; when
// N > 0, 0 ≤ Lo ≤ Hi and FirstUnix ≤ LastUnix; when N = 0 every other field is zero.
type Histogram struct {
	// Buckets maps a bucket index (BucketIndex) to its number of samples. Only buckets with
	// samples are present.
	Buckets map[int32]int64
	// N is the number of samples.
	N int64
	// Total is Σx and TotalSquares is Σx², exact apart from float64 rounding.
	Total, TotalSquares float64
	// Lo and Hi are the exact smallest and largest sample.
	Lo, Hi float64
	// FirstUnix and LastUnix are the times of the oldest and newest sample, in unix seconds.
	FirstUnix, LastUnix int64
	// FallbackN is how many of the N samples came through the fallback source
	// (metrics.k8s.io) rather than a node agent, and FallbackResolutionSec the coarsest
	// resolution among them, in seconds. Both are 0 when every sample is node-local.
	FallbackN, FallbackResolutionSec int64
}

// MarkFallback records that the last n samples added came through the fallback source at
// the given resolution (whole seconds, at least 1).
func (h *Histogram) MarkFallback(n int64, resolution time.Duration) {
	h.FallbackN = min(h.FallbackN+n, h.N)
	h.FallbackResolutionSec = max(h.FallbackResolutionSec, max(int64(resolution/time.Second), 1))
}

// Add records one sample v taken at at. It rejects negative, NaN and infinite values
// (ErrInvalidValue) and leaves the histogram unchanged then.
func (h *Histogram) Add(v float64, at time.Time) error {
	return h.AddN(v, 1, at)
}

// AddN records n identical samples v taken at at (n ≥ 1).
func (h *Histogram) AddN(v float64, n int64, at time.Time) error {
	if err := CheckValue(v); err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("adding %d samples: count must be ≥ 1", n)
	}
	v += 0 // turns −0 into +0
	t := at.Unix()
	if h.Buckets == nil {
		h.Buckets = map[int32]int64{}
	}
	if h.N == 0 {
		h.Lo, h.Hi, h.FirstUnix, h.LastUnix = v, v, t, t
	} else {
		h.Lo, h.Hi = min(h.Lo, v), max(h.Hi, v)
		h.FirstUnix, h.LastUnix = min(h.FirstUnix, t), max(h.LastUnix, t)
	}
	h.Buckets[BucketIndex(v)] += n
	h.N += n
	fn := float64(n)
	h.Total += v * fn
	h.TotalSquares += v * v * fn
	return nil
}

// Merge adds every sample of o into h. Merging is commutative and associative for the
// bucket counts, count, extremes and times; the float sums are too up to float64 rounding
// (exactly so while they stay integers below 2^53).
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.N == 0 {
		return
	}
	if h.Buckets == nil {
		h.Buckets = make(map[int32]int64, len(o.Buckets))
	}
	for i, c := range o.Buckets {
		h.Buckets[i] += c
	}
	h.mergeStats(o)
}

// mergeStats adds o's statistics (everything but the buckets) to h's; o is not empty.
func (h *Histogram) mergeStats(o *Histogram) {
	if h.N == 0 {
		h.Lo, h.Hi, h.FirstUnix, h.LastUnix = o.Lo, o.Hi, o.FirstUnix, o.LastUnix
	} else {
		h.Lo, h.Hi = min(h.Lo, o.Lo), max(h.Hi, o.Hi)
		h.FirstUnix, h.LastUnix = min(h.FirstUnix, o.FirstUnix), max(h.LastUnix, o.LastUnix)
	}
	h.N += o.N
	h.Total += o.Total
	h.TotalSquares += o.TotalSquares
	h.FallbackN += o.FallbackN
	h.FallbackResolutionSec = max(h.FallbackResolutionSec, o.FallbackResolutionSec)
}

// Clone returns a deep copy of h.
func (h *Histogram) Clone() *Histogram {
	c := *h
	if h.Buckets != nil {
		c.Buckets = make(map[int32]int64, len(h.Buckets))
		for i, n := range h.Buckets {
			c.Buckets[i] = n
		}
	}
	return &c
}

// Count is the number of samples.
func (h *Histogram) Count() int64 { return h.N }

// Sum is Σx over the samples.
func (h *Histogram) Sum() float64 { return h.Total }

// SumSquares is Σx² over the samples.
func (h *Histogram) SumSquares() float64 { return h.TotalSquares }

// Max is the exact largest sample (0 when empty).
func (h *Histogram) Max() float64 { return h.Hi }

// Min is the exact smallest sample (0 when empty).
func (h *Histogram) Min() float64 { return h.Lo }

// FirstSeen is the time of the oldest sample, zero when empty.
func (h *Histogram) FirstSeen() time.Time {
	if h.N == 0 {
		return time.Time{}
	}
	return time.Unix(h.FirstUnix, 0).UTC()
}

// LastSeen is the time of the newest sample, zero when empty.
func (h *Histogram) LastSeen() time.Time {
	if h.N == 0 {
		return time.Time{}
	}
	return time.Unix(h.LastUnix, 0).UTC()
}

// Rank is the nearest rank of percentile p among n samples (SPEC §4.2): ceil(p/100 × n)
// clamped to [1, n], computed in integer arithmetic for whole p so rounding cannot move it.
// It returns 0 when n is 0.
func Rank(p float64, n int64) int64 {
	if n <= 0 {
		return 0
	}
	var rank int64
	switch {
	case math.IsNaN(p) || p <= 0:
		rank = 1
	case p >= 100:
		rank = n
	case p == math.Trunc(p):
		rank = (int64(p)*n + 99) / 100
	default:
		// p·n first: for decimal p such as 99.9 it rounds back to the intended product,
		// where p/100 would carry the representation error of p into the ceiling.
		rank = int64(math.Ceil(p * float64(n) / 100))
	}
	return min(max(rank, 1), n)
}

// Quantile returns the nearest-rank percentile p (p in (0, 100]; smaller p acts as the
// minimum rank, larger as the maximum). The value is the upper edge of the bucket that holds
// the sample of that rank, capped at the exact Max: never below the exact nearest-rank
// sample and less than RelativeError above it. An empty histogram yields 0.
func (h *Histogram) Quantile(p float64) float64 {
	rank := Rank(p, h.N)
	if rank == 0 {
		return 0
	}
	idx := make([]int32, 0, len(h.Buckets))
	for i := range h.Buckets {
		idx = append(idx, i)
	}
	slices.Sort(idx) // ZeroBucket is the smallest int32, so it sorts first
	var seen int64
	for _, i := range idx {
		seen += h.Buckets[i]
		if seen >= rank {
			return min(BucketUpper(i), h.Hi)
		}
	}
	return h.Hi // only when the buckets hold fewer than N samples, which Decode rejects
}

// Quantiles returns Quantile(p) for every p of ps, in ps's order, sorting the buckets once
// (a profile's statistics take five percentiles of each series).
func (h *Histogram) Quantiles(ps ...float64) []float64 {
	out := make([]float64, len(ps))
	if h.N == 0 {
		return out
	}
	idx := make([]int32, 0, len(h.Buckets))
	for i := range h.Buckets {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	cum := make([]int64, len(idx))
	var seen int64
	for k, i := range idx {
		seen += h.Buckets[i]
		cum[k] = seen
	}
	for j, p := range ps {
		rank := Rank(p, h.N)
		if rank == 0 {
			continue
		}
		k, _ := slices.BinarySearch(cum, rank) // the first bucket whose running count reaches rank
		if k == len(cum) {
			out[j] = h.Hi
			continue
		}
		out[j] = min(BucketUpper(idx[k]), h.Hi)
	}
	return out
}
