package series

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const prof = "0123456789abcdef"

func TestKeys(t *testing.T) {
	app := SeriesID{Profile: prof, Container: "app", Resource: ResourceMemory, Signal: SignalUsage}
	pod := SeriesID{Profile: prof, Resource: ResourceEphemeralStorage, Signal: SignalUsage}
	start := time.Unix(1780000200, 0)
	cases := map[string]struct{ got, want string }{
		"index":          {IndexKey(prof), "ballast:{0123456789abcdef}:series"},
		"pending":        {PendingKey(prof), "ballast:{0123456789abcdef}:pending"},
		"rollups":        {RollupsKey(prof), "ballast:{0123456789abcdef}:rollups"},
		"epoch":          {EpochKey(prof), "ballast:{0123456789abcdef}:epoch"},
		"oom":            {OOMKey(prof), "ballast:{0123456789abcdef}:oom"},
		"pressure":       {PressureKey(prof), "ballast:{0123456789abcdef}:pressure"},
		"backfill":       {BackfillKey(prof), "ballast:{0123456789abcdef}:backfill"},
		"token":          {app.Token(), "app/memory/usage"},
		"pod token":      {pod.Token(), "/ephemeral-storage/usage"},
		"member":         {Member(app, start), "app/memory/usage:1780000200"},
		"window":         {WindowKey(app, start), "ballast:{0123456789abcdef}:w:app/memory/usage:1780000200"},
		"rollup":         {RollupKey(app, start), "ballast:{0123456789abcdef}:p:app/memory/usage:1780000200"},
		"window of":      {WindowKeyOf(prof, Member(pod, start)), "ballast:{0123456789abcdef}:w:/ephemeral-storage/usage:1780000200"},
		"rollup of":      {RollupKeyOf(prof, Member(app, start)), RollupKey(app, start)},
		"legacy rollup":  {LegacyRollupKeyOf(prof, Member(app, start)), "ballast:{0123456789abcdef}:r:app/memory/usage:1780000200"},
		"profile glob":   {ProfilePattern(prof), "ballast:{0123456789abcdef}:*"},
		"series string":  {app.String(), "0123456789abcdef/app/memory/usage"},
		"pod-level name": {pod.String(), "0123456789abcdef//ephemeral-storage/usage"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
	// Every key of the profile carries the same hash tag, so they share one cluster slot.
	all := append(PurgePatterns(prof), WindowKey(app, start), RollupKey(pod, start))
	for _, k := range all {
		if hashTag(k) != prof {
			t.Errorf("key %q has hash tag %q, want %q", k, hashTag(k), prof)
		}
	}
}

// hashTag is the part of a key Valkey Cluster hashes: the text between the first { and the
// next }, when non-empty.
func hashTag(k string) string {
	i := strings.IndexByte(k, '{')
	if i < 0 {
		return k
	}
	j := strings.IndexByte(k[i+1:], '}')
	if j <= 0 {
		return k
	}
	return k[i+1 : i+1+j]
}

func TestSeriesValidate(t *testing.T) {
	ok := SeriesID{Profile: prof, Container: "app", Resource: ResourceCPU, Signal: SignalUsage}
	cases := map[string]struct {
		mut     func(*SeriesID)
		wantErr string
	}{
		"valid":               {func(*SeriesID) {}, ""},
		"pod level":           {func(s *SeriesID) { s.Container = "" }, ""},
		"peak":                {func(s *SeriesID) { s.Signal = SignalPeak }, ""},
		"empty profile":       {func(s *SeriesID) { s.Profile = "" }, "hex"},
		"uppercase profile":   {func(s *SeriesID) { s.Profile = "ABCDEF" }, "hex"},
		"brace in profile":    {func(s *SeriesID) { s.Profile = "ab}cd" }, "hex"},
		"slash in container":  {func(s *SeriesID) { s.Container = "a/b" }, "DNS label"},
		"colon in container":  {func(s *SeriesID) { s.Container = "a:b" }, "DNS label"},
		"leading dash":        {func(s *SeriesID) { s.Container = "-a" }, "DNS label"},
		"unknown resource":    {func(s *SeriesID) { s.Resource = "gpu" }, "unknown resource"},
		"unknown signal":      {func(s *SeriesID) { s.Signal = "avg" }, "unknown signal"},
		"too long container":  {func(s *SeriesID) { s.Container = strings.Repeat("a", 64) }, "DNS label"},
		"64-char hex profile": {func(s *SeriesID) { s.Profile = strings.Repeat("a", 64) }, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id := ok
			tc.mut(&id)
			err := id.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				back, err := ParseToken(id.Profile, id.Token())
				if err != nil || back != id {
					t.Errorf("ParseToken(Token()) = %v, %v; want %v", back, err, id)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseMember(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    SeriesID
		start   int64
		wantErr bool
	}{
		"container":      {in: "app/cpu/usage:1780000200", want: SeriesID{prof, "app", "cpu", "usage"}, start: 1780000200},
		"pod level":      {in: "/ephemeral-storage/usage:0", want: SeriesID{prof, "", "ephemeral-storage", "usage"}},
		"negative start": {in: "app/memory/peak:-300", want: SeriesID{prof, "app", "memory", "peak"}, start: -300},
		"no start":       {in: "app/cpu/usage", wantErr: true},
		"bad start":      {in: "app/cpu/usage:12x", wantErr: true},
		"two parts":      {in: "app/cpu:1", wantErr: true},
		"four parts":     {in: "a/b/cpu/usage:1", wantErr: true},
		"empty":          {in: "", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id, start, err := ParseMember(prof, tc.in)
			if tc.wantErr {
				if err == nil {
					t.Errorf("ParseMember(%q) = %v, %v; want an error", tc.in, id, start)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, id); diff != "" || start.Unix() != tc.start {
				t.Errorf("ParseMember(%q) start %d, want %d; series (-want +got):\n%s", tc.in, start.Unix(), tc.start, diff)
			}
			if Member(id, start) != tc.in {
				t.Errorf("Member round trip = %q, want %q", Member(id, start), tc.in)
			}
		})
	}
}

func FuzzParseMember(f *testing.F) {
	for _, s := range []string{"app/cpu/usage:1780000200", "/ephemeral-storage/usage:0", "a/b/c:", ":", "x/memory/peak:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		id, start, err := ParseMember(prof, in)
		if err != nil {
			return
		}
		if err := id.Validate(); err != nil {
			t.Fatalf("accepted invalid series %v: %v", id, err)
		}
		again, start2, err := ParseMember(prof, Member(id, start))
		if err != nil || again != id || !start2.Equal(start) {
			t.Fatalf("round trip of %q: %v %v %v", in, again, start2, err)
		}
	})
}

func TestWindowStart(t *testing.T) {
	cases := map[string]struct {
		t     time.Time
		width time.Duration
		want  time.Time
	}{
		"on a boundary":        {time.Unix(1800, 0), 5 * time.Minute, time.Unix(1800, 0)},
		"inside":               {time.Unix(1799, 999), 5 * time.Minute, time.Unix(1500, 0)},
		"sub-second dropped":   {time.Unix(1800, 999999999), 5 * time.Minute, time.Unix(1800, 0)},
		"day aligned to UTC":   {time.Date(2026, 3, 1, 23, 59, 0, 0, time.FixedZone("x", 3600)), 24 * time.Hour, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		"before the epoch":     {time.Unix(-1, 0), time.Minute, time.Unix(-60, 0)},
		"odd width":            {time.Unix(1000, 0), 7 * time.Second, time.Unix(994, 0)},
		"width below a second": {time.Unix(1000, 5), time.Millisecond, time.Unix(1000, 0)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := WindowStart(tc.t, tc.width); !got.Equal(tc.want) {
				t.Errorf("WindowStart(%v, %v) = %v, want %v", tc.t, tc.width, got, tc.want)
			}
		})
	}
}

func TestLayout(t *testing.T) {
	cases := map[string]struct {
		retention              time.Duration
		wantWindow, wantRollup time.Duration
	}{
		"default retention":  {0, 15 * time.Minute, 24 * time.Hour},
		"a week":             {168 * time.Hour, 15 * time.Minute, 24 * time.Hour},
		"four days":          {96 * time.Hour, 15 * time.Minute, 24 * time.Hour},
		"one day":            {24 * time.Hour, 15 * time.Minute, 6 * time.Hour},
		"two hours":          {2 * time.Hour, 15 * time.Minute, 15 * time.Minute},
		"one hour":           {time.Hour, 15 * time.Minute, 15 * time.Minute},
		"half an hour":       {30 * time.Minute, 5 * time.Minute, 5 * time.Minute},
		"shorter than rules": {10 * time.Minute, 5 * time.Minute, 5 * time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := DefaultLayout(tc.retention)
			if l.Window != tc.wantWindow || l.Rollup != tc.wantRollup {
				t.Errorf("window, rollup = %v, %v, want %v, %v", l.Window, l.Rollup, tc.wantWindow, tc.wantRollup)
			}
			if err := l.Validate(); (err == nil) != (4*l.Rollup <= l.Retention) {
				t.Errorf("Validate = %v", err)
			}
		})
	}
	l := DefaultLayout(168 * time.Hour)
	start := time.Unix(1780000200, 0)
	if got, want := l.TTL(), 169*time.Hour; got != want {
		t.Errorf("TTL = %v, want %v", got, want)
	}
	if got, want := l.WindowExpiry(start), start.Add(15*time.Minute+169*time.Hour); !got.Equal(want) {
		t.Errorf("WindowExpiry = %v, want %v", got, want)
	}
	if got := l.RollupStart(start); got.Unix()%86400 != 0 || start.Sub(got) >= 24*time.Hour || got.After(start) {
		t.Errorf("RollupStart(%v) = %v, want the UTC day start", start, got)
	}
	if l.Closed(start, start.Add(l.Window+l.Grace)) || !l.Closed(start, start.Add(l.Window+l.Grace+time.Second)) {
		t.Error("a window must close Grace after its end")
	}
	// Folding waits for the profile's delay after the close; the delays of many profiles
	// spread over a quarter of the window.
	seen := map[time.Duration]bool{}
	for i := range 2000 {
		p := fmt.Sprintf("%016x", i)
		d := l.FoldDelay(p)
		if d < 0 || d >= l.Window/4 || d%time.Second != 0 || d != l.FoldDelay(p) {
			t.Fatalf("FoldDelay(%s) = %v, want a stable whole second in [0, %v)", p, d, l.Window/4)
		}
		seen[d/time.Minute] = true
		if l.Folds(p, start, start.Add(l.Window+l.Grace+d)) || !l.Folds(p, start, start.Add(l.Window+l.Grace+d+time.Second)) {
			t.Fatalf("profile %s: a window must fold its delay %v after it closes", p, d)
		}
	}
	if len(seen) != int(l.Window/4/time.Minute)+1 && len(seen) != int(l.Window/4/time.Minute) {
		t.Errorf("fold delays fall in %d of the minutes of [0, %v)", len(seen), l.Window/4)
	}
	bad := map[string]func(*Layout){
		"window not whole seconds": func(l *Layout) { l.Window = 1500 * time.Millisecond },
		"rollup not a multiple":    func(l *Layout) { l.Rollup = 7 * time.Minute },
		"rollup too long":          func(l *Layout) { l.Rollup = 48 * time.Hour },
		"negative grace":           func(l *Layout) { l.Grace = -1 },
		"no OOM cap":               func(l *Layout) { l.OOMMaxLen = 0 },
	}
	for name, mut := range bad {
		l := DefaultLayout(0)
		mut(&l)
		if l.Validate() == nil {
			t.Errorf("%s: Validate accepted %+v", name, l)
		}
	}
}
