package series

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// apply combines encoded field pairs into a stored hash the way the store's server-side
// script does (integer add, float add, keep-min, keep-max), so the wire contract can be
// tested without a server. pkg/store tests the real script against a real server.
func apply(t testing.TB, stored map[string]string, pairs []string) {
	t.Helper()
	ops := StatOps()
	for i := 0; i+1 < len(pairs); i += 2 {
		f, v := pairs[i], pairs[i+1]
		op, ok := ops[f]
		if !ok {
			op = OpAdd
		}
		cur, had := stored[f]
		switch op {
		case OpAdd:
			a, _ := strconv.ParseInt(cur, 10, 64)
			b, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("field %s: %q is not an integer", f, v)
			}
			stored[f] = strconv.FormatInt(a+b, 10)
		case OpAddFloat:
			a, _ := strconv.ParseFloat(cur, 64)
			b, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("field %s: %q is not a number", f, v)
			}
			stored[f] = formatNumber(a + b)
		case OpMin, OpMax:
			a, _ := strconv.ParseFloat(cur, 64)
			b, _ := strconv.ParseFloat(v, 64)
			if !had || (op == OpMin && b < a) || (op == OpMax && b > a) {
				stored[f] = v
			}
		}
	}
}

func TestWireFields(t *testing.T) {
	h := hist(t, 0, 1024, 1.5)
	want := []string{
		"n", "3", "s", "1025.5", "q", "1048578.25", "lo", "0", "hi", "1024",
		"t0", strconv.FormatInt(t0.Unix(), 10), "t1", strconv.FormatInt(t0.Unix()+2, 10),
		"-2147483648", "1", "22", "1", "360", "1",
	}
	if diff := cmp.Diff(want, h.WireFields()); diff != "" {
		t.Errorf("wire fields (-want +got):\n%s", diff)
	}
	if got := (&Histogram{}).WireFields(); got != nil {
		t.Errorf("empty histogram encodes to %q, want nothing", got)
	}
}

// TestWireCommutes has several simulated nodes write windows of the same series in random
// orders: the decoded hash always equals the merge of what they wrote. Samples are whole
// millicores with small sums, so equality is exact.
func TestWireCommutes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var updates [][]string
	want := &Histogram{}
	for node := 0; node < 5; node++ {
		for flush := 0; flush < 4; flush++ {
			h := &Histogram{}
			for k := 0; k < 1+r.IntN(30); k++ {
				_ = h.Add(float64(r.IntN(2000)), t0.Add(time.Duration(r.IntN(300))*time.Second))
			}
			updates = append(updates, h.WireFields())
			want.Merge(h)
		}
	}
	for trial := 0; trial < 10; trial++ {
		stored := map[string]string{}
		for _, i := range r.Perm(len(updates)) {
			apply(t, stored, updates[i])
		}
		got, err := Decode(stored)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("decoded hash differs from the merged writes (-want +got):\n%s", diff)
		}
	}
}

func TestDecode(t *testing.T) {
	valid := func() map[string]string {
		m := map[string]string{}
		apply(t, m, hist(t, 100, 200, 200).WireFields())
		return m
	}
	with := func(edit func(m map[string]string)) map[string]string {
		m := valid()
		edit(m)
		return m
	}
	cases := map[string]struct {
		in      map[string]string
		wantErr string // substring; "" means success
	}{
		"valid":                {valid(), ""},
		"empty hash is empty":  {map[string]string{}, ""},
		"nil hash is empty":    {nil, ""},
		"unknown field":        {with(func(m map[string]string) { m["x"] = "1" }), `unknown field "x"`},
		"non-canonical bucket": {with(func(m map[string]string) { m["+7"] = "1" }), `unknown field "+7"`},
		"bucket out of range":  {with(func(m map[string]string) { m["99999999"] = "1" }), `unknown field "99999999"`},
		"zero count bucket":    {with(func(m map[string]string) { m["7"] = "0" }), "not a positive integer"},
		"float count bucket":   {with(func(m map[string]string) { m["7"] = "1.5" }), "not a positive integer"},
		"missing sum":          {with(func(m map[string]string) { delete(m, FieldSum) }), `missing field "s"`},
		"missing first":        {with(func(m map[string]string) { delete(m, FieldFirst) }), `missing field "t0"`},
		"count mismatch":       {with(func(m map[string]string) { m[FieldCount] = "4" }), "does not match"},
		"nan sum":              {with(func(m map[string]string) { m[FieldSum] = "nan" }), `field "s"`},
		"inf sum of squares":   {with(func(m map[string]string) { m[FieldSumSquares] = "+Inf" }), `field "q"`},
		"negative min":         {with(func(m map[string]string) { m[FieldMin] = "-1" }), `field "lo"`},
		"min above max":        {with(func(m map[string]string) { m[FieldMin] = "300" }), "min 300 > max 200"},
		"first after last":     {with(func(m map[string]string) { m[FieldFirst] = "9999999999" }), "first"},
		"max outside buckets":  {with(func(m map[string]string) { m[FieldMax] = "250" }), "outside the buckets"},
		"time not integer":     {with(func(m map[string]string) { m[FieldLast] = "1.5" }), `field "t1"`},
		"stats without buckets": {map[string]string{"n": "0", "s": "0", "q": "0", "lo": "0", "hi": "0", "t0": "0", "t1": "0"},
			"does not match"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, err := Decode(tc.in)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if len(tc.in) > 0 && h.Count() != 3 {
					t.Errorf("decoded %d samples, want 3", h.Count())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Decode error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// FuzzDecode feeds arbitrary hashes ("field=value" lines) to Decode: it must never panic,
// and whatever it accepts must keep the histogram invariants and survive a re-encode.
func FuzzDecode(f *testing.F) {
	seed := func(h *Histogram) string {
		var b strings.Builder
		w := h.WireFields()
		for i := 0; i+1 < len(w); i += 2 {
			b.WriteString(w[i] + "=" + w[i+1] + "\n")
		}
		return b.String()
	}
	h := &Histogram{}
	for _, v := range []float64{0, 1, 2.5, 1024, 3e9} {
		_ = h.Add(v, t0)
	}
	f.Add(seed(h))
	f.Add(seed(&Histogram{}))
	one := &Histogram{}
	_ = one.Add(7, t0)
	f.Add(seed(one))
	f.Add("n=1\ns=7\nq=49\nlo=7\nhi=7\nt0=1\nt1=1\n108=1\n")
	f.Add("n=2\ns=nan\nq=1e400\nlo=-0\nhi=1\nt0=5\nt1=4\n-2147483648=2\n")
	f.Add("n=9223372036854775807\n0=9223372036854775807\n1=1\n")
	f.Fuzz(func(t *testing.T, in string) {
		m := map[string]string{}
		for _, line := range strings.Split(in, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				m[k] = v
			}
		}
		h, err := Decode(m)
		if err != nil {
			return
		}
		var sum int64
		for _, c := range h.Buckets {
			sum += c
		}
		if sum != h.N || (h.N > 0 && (h.Lo > h.Hi || h.FirstUnix > h.LastUnix)) {
			t.Fatalf("accepted an inconsistent histogram: %+v", h)
		}
		for _, p := range []float64{1, 50, 99, 100} {
			if q := h.Quantile(p); q < h.Lo || q > h.Hi {
				t.Fatalf("Quantile(%v) = %v outside [%v, %v]", p, q, h.Lo, h.Hi)
			}
		}
		again := map[string]string{}
		apply(t, again, h.WireFields())
		h2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded histogram does not decode: %v", err)
		}
		if diff := cmp.Diff(h, h2); diff != "" {
			t.Fatalf("re-encode changed the histogram (-first +second):\n%s", diff)
		}
	})
}

func TestWindowUpdateValidate(t *testing.T) {
	l := DefaultLayout(0)
	start := WindowStart(t0, l.Window)
	id := SeriesID{Profile: "ab12", Container: "app", Resource: ResourceCPU, Signal: SignalUsage}
	in := &Histogram{}
	_ = in.Add(5, start)
	_ = in.Add(6, start.Add(l.Window-time.Second))
	after := &Histogram{}
	_ = after.Add(5, start.Add(l.Window))
	cases := map[string]struct {
		u       WindowUpdate
		wantErr string
	}{
		"valid":            {WindowUpdate{Series: id, Start: start, Hist: in}, ""},
		"bad series":       {WindowUpdate{Series: SeriesID{Profile: "ab12"}, Start: start, Hist: in}, "unknown resource"},
		"unaligned":        {WindowUpdate{Series: id, Start: start.Add(time.Second), Hist: in}, "not aligned"},
		"nil histogram":    {WindowUpdate{Series: id, Start: start}, "no samples"},
		"empty histogram":  {WindowUpdate{Series: id, Start: start, Hist: &Histogram{}}, "no samples"},
		"sample at end":    {WindowUpdate{Series: id, Start: start, Hist: after}, "outside"},
		"sample before it": {WindowUpdate{Series: id, Start: start.Add(l.Window), Hist: in}, "outside"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.u.Validate(l)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// BenchmarkDecode decodes a window as the reader gets it from HGETALL: 30 samples over ~20
// buckets.
func BenchmarkDecode(b *testing.B) {
	t0 := time.Unix(1_700_000_000, 0)
	h := &Histogram{}
	for i := 0; i < 30; i++ {
		_ = h.Add(float64(100+(i*7)%50)*1_000_001, t0.Add(time.Duration(i)*10*time.Second))
	}
	wire := h.WireFields()
	fields := map[string]string{}
	for i := 0; i < len(wire); i += 2 {
		fields[wire[i]] = wire[i+1]
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(fields); err != nil {
			b.Fatal(err)
		}
	}
}
