package series

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOOMEvent(t *testing.T) {
	ev := OOMEvent{
		Container: "app", Pod: "shop/api-7d9f", Node: "node-3",
		At: time.Date(2026, 3, 1, 12, 0, 0, 123e6, time.UTC), PeakBytes: 512 << 20, LimitBytes: 512 << 20, Kind: "pod",
	}
	fields := func(e OOMEvent) map[string]string {
		m := map[string]string{}
		w := e.WireFields()
		for i := 0; i+1 < len(w); i += 2 {
			m[w[i]] = w[i+1]
		}
		return m
	}
	got, err := DecodeOOMEvent(fields(ev))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ev, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	cases := map[string]struct {
		edit    func(m map[string]string)
		wantErr string
	}{
		"newer agent's extra field": {func(m map[string]string) { m["cgroup"] = "x" }, ""},
		"older agent without kind":  {func(m map[string]string) { delete(m, "kind") }, ""},
		"no container":              {func(m map[string]string) { delete(m, "container") }, "container"},
		"missing time":              {func(m map[string]string) { delete(m, "at") }, `missing field "at"`},
		"bad peak":                  {func(m map[string]string) { m["peak"] = "lots" }, `field "peak"`},
		"negative limit":            {func(m map[string]string) { m["limit"] = "-1" }, "must be ≥ 0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := fields(ev)
			tc.edit(m)
			_, err := DecodeOOMEvent(m)
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

func FuzzDecodeOOMEvent(f *testing.F) {
	f.Add("container=app\npod=a/b\nnode=n\nat=1700000000000\npeak=1\nlimit=2\n")
	f.Add("container=\nat=x\n")
	f.Fuzz(func(t *testing.T, in string) {
		m := map[string]string{}
		for _, line := range strings.Split(in, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				m[k] = v
			}
		}
		e, err := DecodeOOMEvent(m)
		if err != nil {
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("accepted an invalid event: %v", err)
		}
	})
}
