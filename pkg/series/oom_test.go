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

func TestOOMEventVictim(t *testing.T) {
	ev := OOMEvent{Container: "app", Pod: "shop/api", Node: "n", At: time.UnixMilli(1780000000123).UTC(),
		PeakBytes: 300 << 20, LimitBytes: 256 << 20, Kind: "container",
		PID: 4242, Comm: "stress", RSSBytes: 250 << 20, LimitCgroupID: 9876}
	w := ev.WireFields()
	m := map[string]string{}
	for i := 0; i+1 < len(w); i += 2 {
		m[w[i]] = w[i+1]
	}
	got, err := DecodeOOMEvent(m)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ev, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if v := got.Victim(); v != "pid 4242 (stress), rss 262144000 bytes" {
		t.Errorf("Victim() = %q", v)
	}
	// Without a pid (the files' path) no victim field is written at all.
	plain := OOMEvent{Container: "app", At: ev.At, Kind: "unknown"}
	if w := plain.WireFields(); len(w) != 14 {
		t.Errorf("fields without a victim = %v", w)
	}
	if v := plain.Victim(); v != "" {
		t.Errorf("Victim() without pid = %q", v)
	}
	for name, edit := range map[string]func(){
		"bad pid":    func() { m["pid"] = "-1" },
		"bad rss":    func() { m["rss"] = "x" },
		"neg rss":    func() { m["rss"] = "-5" },
		"bad cgroup": func() { m["limit_cgroup"] = "1e3" },
	} {
		t.Run(name, func(t *testing.T) {
			saved := map[string]string{}
			for k, v := range m {
				saved[k] = v
			}
			defer func() { m = saved }()
			edit()
			if _, err := DecodeOOMEvent(m); err == nil {
				t.Errorf("accepted %v", m)
			}
		})
	}
}

func FuzzDecodeOOMEvent(f *testing.F) {
	f.Add("container=app\npod=a/b\nnode=n\nat=1700000000000\npeak=1\nlimit=2\n")
	f.Add("container=app\nat=1\npeak=1\nlimit=2\npid=7\ncomm=x\nrss=4096\nlimit_cgroup=3\n")
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
