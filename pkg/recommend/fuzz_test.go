package recommend

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseDecimal checks that every accepted string is a plain decimal whose exact value
// agrees with strconv's correctly rounded reading and survives a round trip.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"1.2", "1.25", "1.0", "0", "-0.5", "+3.", ".5", "007.50", "1e3", "1/2", "0x10",
		" 1", "1.2.3", "", ".", "-", "120%", "1_0", "99999999999999999999.99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseDecimal(s)
		if err != nil {
			return
		}
		if len(s) > MaxDecimalLen {
			t.Fatalf("accepted %d characters, limit %d", len(s), MaxDecimalLen)
		}
		if strings.ContainsAny(s, "eExXpP_/ \t\n") {
			t.Fatalf("accepted non-plain decimal %q", s)
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("accepted %q that strconv rejects: %v", s, err)
		}
		// Both are correctly rounded to the nearest float64, so they must be equal.
		if got, _ := r.Float64(); got != want {
			t.Fatalf("ParseDecimal(%q) = %v as float64, strconv says %v", s, got, want)
		}
		_, frac, _ := strings.Cut(s, ".")
		back, err := ParseDecimal(r.FloatString(len(frac)))
		if err != nil && len(r.FloatString(len(frac))) <= MaxDecimalLen {
			t.Fatalf("round trip of %q through %q: %v", s, r.FloatString(len(frac)), err)
		}
		if err == nil && back.Cmp(r) != 0 {
			t.Fatalf("round trip of %q gave %s, want %s", s, back, r)
		}
	})
}

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
		h, err := ParseHeadroom(headroom)
		if err != nil {
			return
		}
		if h.Sign() <= 0 {
			t.Fatalf("ParseHeadroom(%q) = %s, want > 0", headroom, h)
		}
		if base < 0 || base > 1<<53 {
			return // statistics are non-negative float64 integers
		}
		got, err := RecommendedValue(Stats{P99: float64(base)}, AggregationP99, h)
		if err != nil {
			t.Fatal(err)
		}
		exact := new(big.Rat).Mul(new(big.Rat).SetInt64(base), h)
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
