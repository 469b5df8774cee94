package recommend

import (
	"math"
	"math/big"
	"testing"

	"github.com/ballastk8s/ballast/pkg/policy"
)

// FuzzRecommendedValue checks trunc(base × headroom) against its definition: the value v is
// the largest integer with v ≤ base × headroom (never one unit short from float error).
func FuzzRecommendedValue(f *testing.F) {
	f.Add(int64(240<<20), "1.2")
	f.Add(int64(240), "1.25")
	f.Add(int64(100), "1.15")
	f.Add(int64(1800<<20), "1.2")
	f.Add(int64(1), "0.5")
	f.Add(int64(math.MaxInt64/2), "3")
	f.Fuzz(func(t *testing.T, base int64, headroom string) {
		h, err := policy.ParseDecimal(headroom)
		if err != nil || h.Sign() <= 0 {
			return // policy.Compile rejects it (InvalidHeadroom)
		}
		if base < 0 || base > 1<<53 {
			return // statistics are non-negative float64 integers
		}
		got, err := RecommendedValue(Stats{P99: float64(base)}, AggregationP99, h)
		if err != nil {
			t.Fatal(err)
		}
		exact := new(big.Rat).Mul(new(big.Rat).SetInt64(base), h.Rat())
		if got == math.MaxInt64 {
			if exact.Cmp(new(big.Rat).SetInt64(math.MaxInt64)) < 0 {
				t.Fatalf("%d × %s saturated below the int64 range", base, headroom)
			}
			return
		}
		lo := new(big.Rat).SetInt64(got)
		hi := new(big.Rat).SetInt64(got + 1)
		if lo.Cmp(exact) > 0 || exact.Cmp(hi) >= 0 {
			t.Fatalf("RecommendedValue(%d × %s) = %d, exact %s", base, headroom, got, exact.FloatString(3))
		}
	})
}
