package series

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// packedVersion is the first byte of a stored packed histogram (AppendBinary); a reader
// refuses any other, so the format can change without a new key name.
const packedVersion = 1

// AppendBinary appends the form a rollup is stored in (one Valkey string instead of a hash
// of a field per bucket), which is also how a Packed holds it: a version byte; N,
// FallbackN and FallbackResolutionSec as uvarints; Total, TotalSquares, Lo and Hi as
// little-endian float64 bits; FirstUnix as a varint and LastUnix−FirstUnix as a uvarint;
// the number of buckets as a uvarint; then the buckets as Pack keeps them (first index,
// then gaps and counts, as varints). A noisy cpu series-day of ~180 buckets takes ~3 bytes
// a bucket this way against ~5.5 in a listpack hash. The zero Packed appends an empty
// histogram.
func (p *Packed) AppendBinary(b []byte) ([]byte, error) {
	if len(p.b) == 0 {
		return appendHeader(b, &Histogram{}, 0), nil
	}
	return append(b, p.b...), nil
}

// MarshalBinary is AppendBinary into a new slice.
func (p *Packed) MarshalBinary() ([]byte, error) {
	return p.AppendBinary(make([]byte, 0, max(len(p.b), packedHeaderMax)))
}

// UnmarshalPacked decodes what AppendBinary wrote. It accepts only a histogram Decode would
// accept from a hash — at least one sample, every bucket a valid index holding ≥ 1 sample,
// strictly ascending, counts summing to N, finite statistics, min and max in the first and
// last bucket, the fallback share within N — so a damaged value is an error, never a
// histogram that misleads.
func UnmarshalPacked(b []byte) (*Packed, error) {
	fail := func(format string, a ...any) (*Packed, error) {
		return nil, fmt.Errorf("decoding packed histogram: "+format, a...)
	}
	if len(b) == 0 {
		return fail("empty")
	}
	if b[0] != packedVersion {
		return fail("version %d, want %d", b[0], packedVersion)
	}
	r := reader{b: b[1:]}
	s := &Histogram{}
	s.N, s.FallbackN, s.FallbackResolutionSec = r.count(), r.count(), r.count()
	for _, f := range []*float64{&s.Total, &s.TotalSquares, &s.Lo, &s.Hi} {
		*f = r.float()
	}
	s.FirstUnix = r.varint()
	span := r.count()
	nb := r.count()
	if r.err != nil {
		return fail("%v", r.err)
	}
	if s.FirstUnix > math.MaxInt64-span {
		return fail("last sample time overflows")
	}
	s.LastUnix = s.FirstUnix + span
	if nb < 1 || nb > int64(len(r.b)/2) { // each bucket takes at least two bytes
		return fail("%d buckets in %d bytes", nb, len(r.b))
	}
	var total int64
	first, last := int32(0), int32(0)
	idx := int64(0)
	for i := int64(0); i < nb; i++ {
		if i == 0 {
			idx = r.varint()
		} else {
			gap := r.count()
			if r.err == nil && (gap < 1 || gap > math.MaxUint32) {
				return fail("bucket %d: gap %d", i, gap)
			}
			idx += gap
		}
		c := r.varint()
		if r.err != nil {
			return fail("bucket %d: %v", i, r.err)
		}
		if idx < math.MinInt32 || idx > math.MaxInt32 || !validBucket(int32(idx)) {
			return fail("bucket %d: index %d is not a bucket", i, idx)
		}
		if c < 1 || total > math.MaxInt64-c {
			return fail("bucket %d: count %d", idx, c)
		}
		total += c
		if i == 0 {
			first = int32(idx)
		}
		last = int32(idx)
	}
	if len(r.b) != 0 {
		return fail("%d bytes after the last bucket", len(r.b))
	}
	if s.N != total {
		return fail("count %d does not match the %d samples in its buckets", s.N, total)
	}
	for _, f := range []float64{s.Total, s.TotalSquares, s.Lo, s.Hi} {
		if CheckValue(f) != nil {
			return fail("statistic %v is not a finite number ≥ 0", f)
		}
	}
	if s.Lo > s.Hi {
		return fail("min %v > max %v", s.Lo, s.Hi)
	}
	if BucketIndex(s.Lo) != first || BucketIndex(s.Hi) != last {
		return fail("min %v or max %v lies outside the buckets %d..%d", s.Lo, s.Hi, first, last)
	}
	if s.FallbackN > s.N || (s.FallbackN > 0) != (s.FallbackResolutionSec > 0) {
		return fail("%d fallback samples (resolution %ds) of %d", s.FallbackN, s.FallbackResolutionSec, s.N)
	}
	return &Packed{b: slices.Clone(b)}, nil
}

// reader consumes varints and floats, remembering the first error.
type reader struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated")

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Varint(r.b)
	if k <= 0 {
		r.err = errTruncated
		return 0
	}
	r.b = r.b[k:]
	return v
}

// count is a uvarint that must fit in an int64.
func (r *reader) count() int64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 || v > math.MaxInt64 {
		r.err = errTruncated
		return 0
	}
	r.b = r.b[k:]
	return int64(v)
}

func (r *reader) float() float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.err = errTruncated
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}
