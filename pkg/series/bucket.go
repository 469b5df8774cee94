package series

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Bucket layout.
//
// Every positive value v = m × 2^e with m in [1, 2) falls into one of SubBuckets log-spaced
// buckets of its octave [2^e, 2^(e+1)]. Bucket i covers (BucketUpper(i−1), BucketUpper(i)],
// so the upper edge of a value's bucket is at least the value and less than GrowthRatio
// times it. The edges come from a fixed table of literals scaled by exact powers of two
// (math.Ldexp), so every binary on every architecture computes bit-identical edges; no
// math.Pow or math.Exp result, which may differ in the last place between platforms, is
// involved.
const (
	// SubBuckets is the number of buckets per power of two.
	SubBuckets = 36
	// GrowthRatio is the ratio of consecutive bucket edges, 2^(1/36).
	GrowthRatio = 1.0194406437021448
	// RelativeError bounds how far above a value the upper edge of its bucket lies:
	// v ≤ BucketUpper(BucketIndex(v)) < v × (1 + RelativeError). It is GrowthRatio − 1,
	// about 1.94 %, inside the 2 % the architecture promises.
	RelativeError = GrowthRatio - 1

	// ZeroBucket holds the value 0 exactly; its upper edge is 0.
	ZeroBucket int32 = math.MinInt32
	// MinBucket and MaxBucket bound the indexes of positive finite float64 values (the
	// smallest subnormal and the largest finite value).
	MinBucket int32 = -1074 * SubBuckets
	MaxBucket int32 = 1024 * SubBuckets
)

// octave holds 2^(j/36) for j = 0..36, each the float64 nearest to the exact value
// (computed with 60-digit decimal arithmetic). TestOctaveTable checks them.
var octave = [SubBuckets + 1]float64{
	1.0, 1.0194406437021448, 1.0392592260318434, 1.0594630943592953,
	1.080059738892306, 1.1010567954531432, 1.122462048309373, 1.1442834330597351,
	1.1665290395761165, 1.189207115002721, 1.2123260668135445, 1.2358944659292892,
	1.2599210498948732, 1.2844147261187115, 1.3093845751749735, 1.3348398541700344,
	1.360790000174377, 1.3872446337212085, 1.4142135623730951, 1.4417067843579314,
	1.4697344922755988, 1.4983070768766815, 1.5274351309146432, 1.5571294530728936,
	1.5874010519681996, 1.618261150231923, 1.649721188670605, 1.681792830507429,
	1.7144879657061456, 1.7478187153790539, 1.7817974362806785, 1.8164367253888063,
	1.851749424574581, 1.887748625363387, 1.9244476737882903, 1.96186017533783,
	2.0,
}

// ErrInvalidValue is returned for a sample that is negative, NaN or infinite.
var ErrInvalidValue = errors.New("invalid sample value")

// CheckValue returns an error wrapping ErrInvalidValue unless v is finite and ≥ 0.
func CheckValue(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%w %v: must be finite and ≥ 0", ErrInvalidValue, v)
	}
	return nil
}

// BucketIndex returns the bucket holding v: ZeroBucket for 0, otherwise the smallest i with
// BucketUpper(i) ≥ v. v must pass CheckValue; negative and NaN values map to ZeroBucket
// and +Inf to MaxBucket+1, which callers reject beforehand.
func BucketIndex(v float64) int32 {
	if !(v > 0) { // 0, negative, NaN
		return ZeroBucket
	}
	if math.IsInf(v, 1) {
		return MaxBucket + 1
	}
	frac, exp := math.Frexp(v) // v = frac × 2^exp, frac in [0.5, 1)
	m := frac * 2              // exact: m in [1, 2)
	e := exp - 1
	j := sort.SearchFloat64s(octave[:], m) // smallest j with octave[j] ≥ m; 0 only when m = 1
	return int32(e*SubBuckets + j)
}

// BucketUpper returns the inclusive upper edge of bucket i (0 for ZeroBucket). It is the
// one definition of the edges; BucketIndex is its inverse.
func BucketUpper(i int32) float64 {
	if i == ZeroBucket {
		return 0
	}
	e, j := floorDivMod(int(i), SubBuckets)
	return math.Ldexp(octave[j], e)
}

// BucketLower returns the exclusive lower edge of bucket i: values v in bucket i satisfy
// BucketLower(i) < v ≤ BucketUpper(i). For ZeroBucket it returns 0 (the bucket holds 0
// only).
func BucketLower(i int32) float64 {
	if i == ZeroBucket || i <= MinBucket {
		return 0
	}
	return BucketUpper(i - 1)
}

// validBucket reports whether i is an index BucketIndex can return for a finite value.
func validBucket(i int32) bool {
	return i == ZeroBucket || (i >= MinBucket && i <= MaxBucket)
}

func floorDivMod(a, b int) (q, r int) {
	q, r = a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}
