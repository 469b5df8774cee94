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

// storedFixture is packedFixture's kind of spread with finite sums (a stored rollup's
// Σx² must be finite, as in a hash).
func storedFixture() *Histogram {
	h := &Histogram{}
	at := time.Unix(1_780_000_000, 0)
	for i, v := range []float64{0, 0, 1e-300, 0.5, 3, 3, 250, 251, 1e6, 3e12} {
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

// TestPackedBinaryRoundTrip: the stored form decodes to the same histogram; every
// truncation, a trailing byte, another version and an empty histogram are refused
// (FuzzUnmarshalPacked covers arbitrary changes).
func TestPackedBinaryRoundTrip(t *testing.T) {
	h := storedFixture()
	b, err := Pack(h).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	p, err := UnmarshalPacked(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Unpack(); !reflect.DeepEqual(got, h) {
		t.Fatalf("decoded %+v, want %+v", got, h)
	}
	for n := 0; n < len(b); n++ {
		if _, err := UnmarshalPacked(b[:n]); err == nil {
			t.Errorf("truncated to %d of %d bytes: accepted", n, len(b))
		}
	}
	if _, err := UnmarshalPacked(append(b[:len(b):len(b)], 0)); err == nil {
		t.Error("a trailing byte was accepted")
	}
	bad := append([]byte{}, b...)
	bad[0] = 2
	if _, err := UnmarshalPacked(bad); err == nil {
		t.Error("version 2 was accepted")
	}
	empty, err := Pack(&Histogram{}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalPacked(empty); err == nil {
		t.Error("an empty histogram was accepted: a stored rollup has samples")
	}
}

// FuzzUnmarshalPacked: no input crashes the decoder, and whatever it accepts is a
// histogram Decode would accept from a hash, and survives encoding again (varints may be
// written overlong, so the bytes may differ).
func FuzzUnmarshalPacked(f *testing.F) {
	b, _ := Pack(storedFixture()).MarshalBinary()
	f.Add(b)
	f.Add([]byte{packedVersion})
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := UnmarshalPacked(in)
		if err != nil {
			return
		}
		h := p.Unpack()
		if _, err := Decode(wireMap(h)); err != nil {
			t.Fatalf("accepted %x, which as a hash is refused: %v", in, err)
		}
		out, _ := p.MarshalBinary()
		again, err := UnmarshalPacked(out)
		if err != nil || !reflect.DeepEqual(again.Unpack(), h) {
			t.Fatalf("%x re-encoded as %x: %v, %+v", in, out, err, again)
		}
	})
}

// wireMap is h as the hash fields an agent writes.
func wireMap(h *Histogram) map[string]string {
	f := h.WireFields()
	m := make(map[string]string, len(f)/2)
	for i := 0; i < len(f); i += 2 {
		m[f[i]] = f[i+1]
	}
	return m
}
