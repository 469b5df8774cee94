package series

import (
	"encoding/binary"
	"slices"
)

// Packed is a histogram frozen into a compact form, for caches that hold many of them (the
// control plane's store reader keeps every series' rollups and open windows): the
// statistics as they are and the buckets as varints, ascending by index (the first index,
// then the gaps to the next, each with its count). A bucket costs 2–4 bytes instead of a
// map slot's 16 and the map's spare room. A Packed is never changed after Pack.
type Packed struct {
	stats   Histogram // Buckets is nil
	buckets []byte
	n       int // number of buckets
}

// Pack freezes h (nil: an empty histogram). h is not retained.
func Pack(h *Histogram) *Packed {
	p := &Packed{}
	if h == nil {
		return p
	}
	p.stats = *h
	p.stats.Buckets = nil
	idx := sortedBuckets(h.Buckets)
	buf := make([]byte, 0, 3*len(idx))
	prev := int64(0)
	for i, b := range idx {
		if i == 0 {
			buf = binary.AppendVarint(buf, int64(b))
		} else {
			buf = binary.AppendUvarint(buf, uint64(int64(b)-prev))
		}
		prev = int64(b)
		buf = binary.AppendVarint(buf, h.Buckets[b])
	}
	p.buckets, p.n = slices.Clip(buf), len(idx)
	return p
}

// N is the number of samples.
func (p *Packed) N() int64 { return p.stats.N }

// each calls f for every bucket, ascending by index.
func (p *Packed) each(f func(index int32, count int64)) {
	buf, prev := p.buckets, int64(0)
	for i := 0; i < p.n; i++ {
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
	h := p.stats
	if p.n > 0 {
		h.Buckets = make(map[int32]int64, p.n)
		p.each(func(i int32, c int64) { h.Buckets[i] = c })
	}
	return &h
}

// MergePacked adds p's samples to h, as Merge(p.Unpack()) would without the copy.
func (h *Histogram) MergePacked(p *Packed) {
	if p == nil || p.stats.N == 0 {
		return
	}
	if h.Buckets == nil {
		h.Buckets = make(map[int32]int64, p.n)
	}
	p.each(func(i int32, c int64) { h.Buckets[i] += c })
	h.mergeStats(&p.stats)
}
