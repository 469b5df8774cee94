package recommend

import (
	"math"
	"time"
)

// Stats are the statistics of one series (SPEC §4.2), in millicores for cpu and bytes
// otherwise. The zero value is the statistics of an empty series.
type Stats struct {
	Samples  int64
	TimeSpan time.Duration // newest − oldest retained sample; 0 when n = 0
	P50      float64
	P75      float64
	P90      float64
	P95      float64
	P99      float64
	Max      float64
	// Sum is Σx, kept so the mean can be used exactly by the avg aggregation.
	Sum    float64
	Mean   float64 // Σx/n
	StdDev float64 // population: √(Σx²/n − mean²)
	CV     float64 // StdDev/Mean; 0 when Mean is 0
	// LastUpdated is the time of the computation.
	LastUpdated time.Time
}

// multiQuantile is a Distribution that computes several percentiles in one pass
// (series.Histogram); each value equals Quantile's.
type multiQuantile interface {
	Quantiles(ps ...float64) []float64
}

// StatsOf computes the statistics of d at now. A nil or empty distribution yields zero
// statistics with LastUpdated = now.
func StatsOf(d Distribution, now time.Time) Stats {
	s := Stats{LastUpdated: now}
	if d == nil || d.Count() <= 0 {
		return s
	}
	n := d.Count()
	s.Samples = n
	if span := d.LastSeen().Sub(d.FirstSeen()); span > 0 {
		s.TimeSpan = span
	}
	if q, ok := d.(multiQuantile); ok {
		v := q.Quantiles(50, 75, 90, 95, 99)
		s.P50, s.P75, s.P90, s.P95, s.P99 = v[0], v[1], v[2], v[3], v[4]
	} else {
		s.P50 = d.Quantile(50)
		s.P75 = d.Quantile(75)
		s.P90 = d.Quantile(90)
		s.P95 = d.Quantile(95)
		s.P99 = d.Quantile(99)
	}
	s.Max = d.Max()
	s.Sum = d.Sum()
	fn := float64(n)
	s.Mean = s.Sum / fn
	// Σx²/n − mean² can come out slightly negative (or NaN) from rounding when every sample
	// is equal; such a series has no spread.
	if variance := d.SumSquares()/fn - s.Mean*s.Mean; variance > 0 {
		s.StdDev = math.Sqrt(variance)
	}
	if s.Mean != 0 {
		s.CV = s.StdDev / s.Mean
	}
	return s
}

// Aggregate returns the statistic an aggregation names (avg is the mean); ok is false for
// an unknown aggregation.
func (s Stats) Aggregate(aggregation string) (v float64, ok bool) {
	switch aggregation {
	case AggregationP50:
		return s.P50, true
	case AggregationP75:
		return s.P75, true
	case AggregationP90:
		return s.P90, true
	case AggregationP95:
		return s.P95, true
	case AggregationP99:
		return s.P99, true
	case AggregationMax:
		return s.Max, true
	case AggregationAvg:
		return s.Mean, true
	}
	return 0, false
}
