package series

import (
	"encoding/binary"
	"math"
	"slices"
)

// Packed is a histogram frozen into a compact form, for caches that hold many of them (the
// control plane's store reader keeps every series' rollups, merged days and open windows):
// one byte slice in the form a rollup is stored in (AppendBinary) — the statistics as
// varints and float bits, then the buckets as varints, ascending by index (the first
// index, then the gaps to the next, each with its count). A bucket costs 2–4 bytes instead
// of a map slot's 16 and the map's spare room, and the statistics ~45 bytes instead of a
// Histogram's 80, with no second allocation. A Packed is never changed after Pack; the
// zero Packed is an empty histogram.
type Packed struct {
	b []byte
}

// Pack freezes h (nil: an empty histogram). h is not retained.
func Pack(h *Histogram) *Packed {
	p := &Packed{}
	p.pack(h)
	return p
}

// PackValue is Pack returning the value, for caches that hold Packed in a map or slice
// without a pointer of their own.
func PackValue(h *Histogram) Packed {
	var p Packed
	p.pack(h)
	return p
}

func (p *Packed) pack(h *Histogram) {
	if h == nil {
		h = &Histogram{}
	}
	idx := sortedBuckets(h.Buckets)
	b := make([]byte, 0, packedHeaderMax+3*len(idx))
	b = appendHeader(b, h, len(idx))
	prev := int64(0)
	for i, k := range idx {
		if i == 0 {
			b = binary.AppendVarint(b, int64(k))
		} else {
			b = binary.AppendUvarint(b, uint64(int64(k)-prev))
		}
		prev = int64(k)
		b = binary.AppendVarint(b, h.Buckets[k])
	}
	p.b = slices.Clip(b)
}

// packedHeaderMax bounds the header AppendBinary writes: the version byte, six varints of
// at most 10 bytes and four float64s.
const packedHeaderMax = 1 + 6*binary.MaxVarintLen64 + 4*8

// appendHeader writes the version byte and h's statistics, then the number of buckets n
// (the layout AppendBinary documents).
func appendHeader(b []byte, h *Histogram, n int) []byte {
	b = append(b, packedVersion)
	b = binary.AppendUvarint(b, uint64(h.N))
	b = binary.AppendUvarint(b, uint64(h.FallbackN))
	b = binary.AppendUvarint(b, uint64(h.FallbackResolutionSec))
	for _, f := range []float64{h.Total, h.TotalSquares, h.Lo, h.Hi} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	b = binary.AppendVarint(b, h.FirstUnix)
	b = binary.AppendUvarint(b, uint64(h.LastUnix-h.FirstUnix))
	return binary.AppendUvarint(b, uint64(n))
}

// header decodes the statistics of a Packed that Pack or UnmarshalPacked made (so it is
// well formed), the number of buckets and the bytes holding them.
func (p *Packed) header() (s Histogram, n int, buckets []byte) {
	if len(p.b) == 0 {
		return s, 0, nil
	}
	b := p.b[1:]
	uv := func() uint64 {
		v, k := binary.Uvarint(b)
		b = b[k:]
		return v
	}
	s.N, s.FallbackN, s.FallbackResolutionSec = int64(uv()), int64(uv()), int64(uv())
	for _, f := range []*float64{&s.Total, &s.TotalSquares, &s.Lo, &s.Hi} {
		*f = math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	first, k := binary.Varint(b)
	b = b[k:]
	s.FirstUnix = first
	s.LastUnix = first + int64(uv())
	n = int(uv())
	return s, n, b
}

// N is the number of samples.
func (p *Packed) N() int64 {
	if len(p.b) < 2 {
		return 0
	}
	v, _ := binary.Uvarint(p.b[1:])
	return int64(v)
}

// eachBucket calls f for every one of the n buckets in buf, ascending by index.
func eachBucket(buf []byte, n int, f func(index int32, count int64)) {
	prev := int64(0)
	for i := 0; i < n; i++ {
		var v uint64
		var d int64
		var k int
		if i == 0 {
			d, k = binary.Varint(buf)
			prev = d
		} else {
			v, k = binary.Uvarint(buf)
			prev += int64(v)
		}
		buf = buf[k:]
		c, k := binary.Varint(buf)
		buf = buf[k:]
		f(int32(prev), c)
	}
}

// Unpack returns the histogram as a new value the caller owns.
func (p *Packed) Unpack() *Histogram {
	h, n, buf := p.header()
	if n > 0 {
		h.Buckets = make(map[int32]int64, n)
		eachBucket(buf, n, func(i int32, c int64) { h.Buckets[i] = c })
	}
	return &h
}

// MergePacked adds p's samples to h, as Merge(p.Unpack()) would without the copy.
func (h *Histogram) MergePacked(p *Packed) {
	if p == nil || p.N() == 0 {
		return
	}
	s, n, buf := p.header()
	if h.Buckets == nil {
		h.Buckets = make(map[int32]int64, n)
	}
	eachBucket(buf, n, func(i int32, c int64) { h.Buckets[i] += c })
	h.mergeStats(&s)
}
