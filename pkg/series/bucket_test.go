package series

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestOctaveTable checks the edge literals: they start at 1, end at 2, grow strictly, stay
// within a couple of ulps of 2^(j/36) and no step exceeds GrowthRatio by more than rounding.
func TestOctaveTable(t *testing.T) {
	if octave[0] != 1 || octave[SubBuckets] != 2 {
		t.Fatalf("octave table must run from 1 to 2, got %v..%v", octave[0], octave[SubBuckets])
	}
	for j := 1; j <= SubBuckets; j++ {
		if !(octave[j] > octave[j-1]) {
			t.Errorf("octave[%d] = %v is not above octave[%d] = %v", j, octave[j], j-1, octave[j-1])
		}
		want := math.Pow(2, float64(j)/SubBuckets)
		if d := math.Abs(octave[j]-want) / want; d > 4e-16 {
			t.Errorf("octave[%d] = %v, 2^(%d/36) = %v (relative difference %g)", j, octave[j], j, want, d)
		}
		// Tolerance 1e-15: the literals are rounded to float64, the ratio itself is 1.01944.
		if r := octave[j] / octave[j-1]; r > GrowthRatio*(1+1e-15) {
			t.Errorf("step %d grows by %v, more than GrowthRatio %v", j, r, GrowthRatio)
		}
	}
	if RelativeError >= 0.02 {
		t.Errorf("RelativeError %v must stay below the 2 %% the architecture promises", RelativeError)
	}
}

func TestBucketIndex(t *testing.T) {
	cases := map[string]struct {
		v    float64
		want int32
	}{
		"zero":                    {0, ZeroBucket},
		"one is an edge":          {1, 0},
		"just above one":          {math.Nextafter(1, 2), 1},
		"two is an edge":          {2, SubBuckets},
		"just below two":          {math.Nextafter(2, 0), SubBuckets},
		"first edge above one":    {octave[1], 1},
		"just above first edge":   {math.Nextafter(octave[1], 2), 2},
		"half":                    {0.5, -SubBuckets},
		"1024 millicores":         {1024, 10 * SubBuckets},
		"smallest subnormal":      {math.SmallestNonzeroFloat64, MinBucket},
		"largest finite":          {math.MaxFloat64, MaxBucket},
		"one gibibyte":            {1 << 30, 30 * SubBuckets},
		"three quarters of a GiB": {0.75 * (1 << 30), 29*SubBuckets + 22}, // 1.5 lies in (2^(21/36), 2^(22/36)]
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := BucketIndex(tc.v); got != tc.want {
				t.Errorf("BucketIndex(%v) = %d, want %d", tc.v, got, tc.want)
			}
		})
	}
}

// TestBucketBounds checks, for values spread over the whole range cpu and byte samples can
// take (and well beyond), that each value lies in its bucket and that the upper edge is less
// than RelativeError above it.
func TestBucketBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 200000; k++ {
		v := math.Exp(rng.Float64()*120 - 40) // e^-40 … e^80
		if k%7 == 0 {
			v = math.Round(v) // integers, the common case
		}
		if v == 0 {
			continue
		}
		i := BucketIndex(v)
		lo, hi := BucketLower(i), BucketUpper(i)
		if !(lo < v && v <= hi) {
			t.Fatalf("value %v in bucket %d = (%v, %v]", v, i, lo, hi)
		}
		if hi >= v*GrowthRatio {
			t.Fatalf("upper edge %v of %v's bucket is %g above it, not below %g", hi, v, hi/v-1, RelativeError)
		}
		if BucketIndex(hi) != i {
			t.Fatalf("upper edge %v of bucket %d maps to bucket %d", hi, i, BucketIndex(hi))
		}
	}
}

func TestCheckValue(t *testing.T) {
	cases := map[string]struct {
		v       float64
		invalid bool
	}{
		"zero":      {0, false},
		"integer":   {250, false},
		"fraction":  {0.001, false},
		"huge":      {1e300, false},
		"negative":  {-1, true},
		"neg zero":  {math.Copysign(0, -1), false},
		"nan":       {math.NaN(), true},
		"+inf":      {math.Inf(1), true},
		"-inf":      {math.Inf(-1), true},
		"tiny neg.": {-math.SmallestNonzeroFloat64, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckValue(tc.v)
			if got := errors.Is(err, ErrInvalidValue); got != tc.invalid {
				t.Errorf("CheckValue(%v) = %v, want invalid=%v", tc.v, err, tc.invalid)
			}
		})
	}
}
