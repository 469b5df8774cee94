package recommend

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// Amounts is the recommendation of one resource in integer units (millicores for cpu,
// bytes otherwise). HasRequest and HasLimit say which fields the policy set.
type Amounts struct {
	Request    int64
	Limit      int64
	HasRequest bool
	HasLimit   bool
	// RequestBasis and LimitBasis say where each value comes from ("avg 180m × 1.25 = 225m").
	RequestBasis, LimitBasis string
}

// Recommendation renders a as the status entry of resource res (SPEC §2.4).
func (a Amounts) Recommendation(res string) v1.Recommendation {
	var r v1.Recommendation
	if a.HasRequest {
		r.Request, r.RequestBasis = FormatValue(res, a.Request), a.RequestBasis
	}
	if a.HasLimit {
		r.Limit, r.LimitBasis = FormatValue(res, a.Limit), a.LimitBasis
	}
	return r
}

// IsZero reports whether no field is set.
func (a Amounts) IsZero() bool { return !a.HasRequest && !a.HasLimit }

// Recommend computes the recommendation of resource res from the statistics of a ready
// series (SPEC §5.1): every metric naming res sets its field; when two target the same
// field, the later one wins. The result is zero when no metric names res. Byte resources
// are rounded up to a whole MiB (SPEC §2.4), which only ever adds < 1 MiB of headroom.
func Recommend(res string, s Stats, metrics []policy.Metric) (Amounts, error) {
	var a Amounts
	for _, m := range metrics {
		if m.Resource != res {
			continue
		}
		v, err := RecommendedValue(s, m.Aggregation, m.Headroom)
		if err != nil {
			return Amounts{}, fmt.Errorf("%s %s from %s: %w", res, m.Field, m.Aggregation, err)
		}
		basis := basisOf(res, s, m, v)
		if res != ResourceCPU {
			v = RoundUpMiB(v)
		}
		if m.Field == FieldLimit {
			a.Limit, a.HasLimit, a.LimitBasis = v, true, basis
		} else {
			a.Request, a.HasRequest, a.RequestBasis = v, true, basis
		}
	}
	return a, nil
}

// basisOf explains v, the exact value of metric m: "avg 180m × 1.25 = 225m",
// "p99 192.00Mi × 1.2 = 230.40Mi, rounded up to 231Mi".
func basisOf(res string, s Stats, m policy.Metric, v int64) string {
	stat, _ := s.Aggregate(m.Aggregation)
	shown := FormatStat(res, stat)
	if res == ResourceCPU && m.Aggregation == AggregationAvg && s.Samples > 0 && stat != math.Trunc(stat) {
		// The mean's fraction counts (SPEC §5.1): show it, so 180.9m × 1.25 = 226m adds up.
		shown = fmt.Sprintf("%.1fm", stat)
	}
	b := m.Aggregation + " " + shown
	if m.Headroom.Sign() != 0 {
		b += " × " + m.Headroom.String()
	}
	if res != ResourceCPU && RoundUpMiB(v) != v {
		return b + " = " + FormatStat(res, float64(v)) + ", rounded up to " + FormatValue(res, v)
	}
	return b + " = " + FormatValue(res, v)
}

// RoundUpMiB rounds a byte count up to a whole MiB (SPEC §2.4), saturating at the largest
// whole MiB an int64 holds; v ≤ 0 is returned unchanged.
func RoundUpMiB(v int64) int64 {
	const maxMiB = math.MaxInt64 &^ (mib - 1)
	switch {
	case v <= 0:
		return v
	case v > maxMiB:
		return maxMiB
	}
	return (v + mib - 1) &^ (mib - 1)
}

// roundUp rounds the byte fields of a up to whole MiB.
func (a Amounts) roundUp() Amounts {
	a.Request, a.Limit = RoundUpMiB(a.Request), RoundUpMiB(a.Limit)
	return a
}

var errNotFinite = errors.New("statistic is not a finite number")

// RecommendedValue is trunc(base × headroom) toward zero, computed exactly (SPEC §5.1), so
// 240Mi × 1.2 is 288Mi and never one byte less.
//
// Samples are integer units, so every percentile and the max is an integer; base is that
// statistic rounded to the nearest integer, which removes any float noise a histogram edge
// carries. For avg, base is the exact rational Σx/n (Σx rounded to an integer for the same
// reason), so the mean's fraction still counts before truncation. The result saturates at
// the int64 range and is never negative. headroom is the policy's parsed multiplier; the
// zero Decimal (a metric built without one) means 1.0.
func RecommendedValue(s Stats, aggregation string, headroom policy.Decimal) (int64, error) {
	stat, ok := s.Aggregate(aggregation)
	if !ok {
		return 0, fmt.Errorf("unknown aggregation %q", aggregation)
	}
	base := new(big.Rat)
	if aggregation == AggregationAvg {
		if s.Samples <= 0 {
			return 0, nil
		}
		if math.IsNaN(s.Sum) || math.IsInf(s.Sum, 0) {
			return 0, errNotFinite
		}
		base.SetFloat64(math.Round(s.Sum))
		base.Quo(base, new(big.Rat).SetInt64(s.Samples))
	} else {
		if math.IsNaN(stat) || math.IsInf(stat, 0) {
			return 0, errNotFinite
		}
		base.SetFloat64(math.Round(stat))
	}
	if headroom.Sign() != 0 {
		base.Mul(base, headroom.Rat())
	}
	// big.Int.Quo truncates toward zero.
	v := new(big.Int).Quo(base.Num(), base.Denom())
	switch {
	case v.Sign() < 0:
		return 0, nil
	case !v.IsInt64():
		return math.MaxInt64, nil
	}
	return v.Int64(), nil
}
