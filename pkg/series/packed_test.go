package series

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func packedFixture() *Histogram {
	h := &Histogram{}
	at := time.Unix(1_780_000_000, 0)
	for i, v := range []float64{0, 0, 1e-300, 0.5, 3, 3, 250, 251, 1e6, math.MaxFloat64} {
		if err := h.Add(v, at.Add(time.Duration(i)*time.Second)); err != nil {
			panic(err)
		}
	}
	h.MarkFallback(2, 10*time.Second)
	return h
}

// TestPackRoundTrip: a packed histogram unpacks to the same histogram, merges like the
// original (into an empty and a non-empty one), and is not changed by either.
func TestPackRoundTrip(t *testing.T) {
	for _, h := range []*Histogram{{}, packedFixture()} {
		p := Pack(h)
		if got := p.Unpack(); !reflect.DeepEqual(got, h) && !(h.N == 0 && got.N == 0) {
			t.Fatalf("unpacked %+v, want %+v", got, h)
		}
		if p.N() != h.N {
			t.Errorf("N %d, want %d", p.N(), h.N)
		}
		for _, base := range []*Histogram{{}, packedFixture()} {
			want, got := base.Clone(), base.Clone()
			want.Merge(h)
			got.MergePacked(p)
			if !reflect.DeepEqual(got, want) && !(want.N == 0 && got.N == 0) {
				t.Errorf("MergePacked %+v, want %+v", got, want)
			}
		}
		if again := p.Unpack(); !reflect.DeepEqual(again, p.Unpack()) {
			t.Errorf("unpacking changed the packed histogram")
		}
	}
	if p := Pack(nil); p.N() != 0 || p.Unpack().N != 0 {
		t.Errorf("Pack(nil) is not empty")
	}
}

// FuzzPack: any bucket set (indexes anywhere in int32, ZeroBucket included, any counts)
// survives Pack and Unpack.
func FuzzPack(f *testing.F) {
	f.Add(int32(ZeroBucket), int64(3), int32(5), int64(1), int32(MaxBucket), int64(1<<40))
	f.Add(int32(-7), int64(-1), int32(-7), int64(2), int32(0), int64(0))
	f.Fuzz(func(t *testing.T, i1 int32, c1 int64, i2 int32, c2 int64, i3 int32, c3 int64) {
		h := &Histogram{N: 9, Total: 1.5, Lo: 1, Hi: 2, Buckets: map[int32]int64{i1: c1, i2: c2, i3: c3}}
		if got := Pack(h).Unpack(); !reflect.DeepEqual(got, h) {
			t.Fatalf("round trip %+v, want %+v", got, h)
		}
	})
}
