package series

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func pressureFields(r PressureReading) map[string]string {
	m := map[string]string{}
	w := r.WireFields()
	for i := 0; i+1 < len(w); i += 2 {
		m[w[i]] = w[i+1]
	}
	return m
}

func TestPressureReading(t *testing.T) {
	r := PressureReading{Container: "app", Pod: "shop/api-7d9f", Node: "node-3",
		At: time.Date(2026, 3, 1, 12, 0, 10, 250e6, time.UTC), Interval: 10 * time.Second,
		StallPerSec: 125_000, Source: PressureSourcePSI}
	got, err := DecodePressureReading(pressureFields(r))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if s := got.Start(); !s.Equal(time.Date(2026, 3, 1, 12, 0, 0, 250e6, time.UTC)) {
		t.Errorf("Start() = %v", s)
	}
	if f := got.Fraction(); f != 0.125 {
		t.Errorf("Fraction() = %v", f)
	}
	cases := map[string]struct {
		edit    func(m map[string]string)
		wantErr string
	}{
		"newer agent's extra field": {func(m map[string]string) { m["full"] = "3" }, ""},
		"ebpf source":               {func(m map[string]string) { m["source"] = "ebpf" }, ""},
		"no container":              {func(m map[string]string) { delete(m, "container") }, "container"},
		"missing time":              {func(m map[string]string) { delete(m, "at") }, `missing field "at"`},
		"missing interval":          {func(m map[string]string) { delete(m, "interval") }, `missing field "interval"`},
		"zero interval":             {func(m map[string]string) { m["interval"] = "0" }, "interval"},
		"huge interval":             {func(m map[string]string) { m["interval"] = "999999999999" }, "out of range"},
		"stall above a second":      {func(m map[string]string) { m["stall"] = "1000001" }, "within [0, 1000000]"},
		"negative stall":            {func(m map[string]string) { m["stall"] = "-1" }, "within"},
		"fractional stall":          {func(m map[string]string) { m["stall"] = "0.5" }, `field "stall"`},
		"unknown source":            {func(m map[string]string) { m["source"] = "guess" }, "source"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := pressureFields(r)
			tc.edit(m)
			_, err := DecodePressureReading(m)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestStallPerSecond(t *testing.T) {
	cases := map[string]struct {
		stalled, interval time.Duration
		want              int64
	}{
		"10% of 10s":               {time.Second, 10 * time.Second, 100_000},
		"1µs of 1s":                {time.Microsecond, time.Second, 1},
		"below a µs per s":         {time.Microsecond, 2 * time.Second, 0},
		"all of it":                {10 * time.Second, 10 * time.Second, StallScale},
		"threads summed beyond 1s": {35 * time.Second, 10 * time.Second, StallScale},
		"no interval":              {time.Second, 0, 0},
		"negative stall":           {-time.Second, time.Second, 0},
	}
	for name, tc := range cases {
		if got := StallPerSecond(tc.stalled, tc.interval); got != tc.want {
			t.Errorf("%s: StallPerSecond(%v, %v) = %d, want %d", name, tc.stalled, tc.interval, got, tc.want)
		}
	}
}

func FuzzDecodePressureReading(f *testing.F) {
	f.Add("container=app\npod=a/b\nnode=n\nat=1700000000000\ninterval=10000\nstall=120000\nsource=psi\n")
	f.Add("container=\nat=x\ninterval=-1\n")
	f.Fuzz(func(t *testing.T, in string) {
		m := map[string]string{}
		for _, line := range strings.Split(in, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				m[k] = v
			}
		}
		r, err := DecodePressureReading(m)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted an invalid reading: %v", err)
		}
		again, err := DecodePressureReading(pressureFields(r))
		if err != nil || !again.At.Equal(r.At) || again.StallPerSec != r.StallPerSec || again.Interval != r.Interval {
			t.Fatalf("re-encoding %+v: %+v, %v", r, again, err)
		}
	})
}
