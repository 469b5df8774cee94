package buffer

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ballastk8s/ballast/pkg/series"
)

const (
	hash = "0123456789abcdef"
	// testWindow is the window width these tests are written for.
	testWindow = 5 * time.Minute
)

var (
	t0  = time.Unix(1_800_000_000, 0).UTC() // a window boundary (divisible by 300)
	cpu = Series{Container: "app", Resource: series.ResourceCPU, Signal: series.SignalUsage}
	mem = Series{Container: "app", Resource: series.ResourceMemory, Signal: series.SignalUsage}
	eph = Series{Resource: series.ResourceEphemeralStorage, Signal: series.SignalUsage}
)

func add(t *testing.T, b *Buffer, hash, pod string, s Series, v float64, at time.Time) {
	t.Helper()
	if err := b.Add(hash, pod, s, v, at); err != nil {
		t.Fatal(err)
	}
}

// summary is what a test compares of a taken window.
type summary struct {
	Series   string
	Start    int64
	N        int64
	Min, Max float64
}

func summarize(ups []series.WindowUpdate) []summary {
	var out []summary
	for _, u := range ups {
		out = append(out, summary{u.Series.String(), u.Start.Unix(), u.Hist.N, u.Hist.Min(), u.Hist.Max()})
	}
	return out
}

func TestSamplesAggregateIntoWindows(t *testing.T) {
	b := New(testWindow, Limits{Filed: 100, Pending: 100})
	for i := range 10 {
		add(t, b, hash, "uid", cpu, float64(100+i), t0.Add(time.Duration(i)*time.Second))
	}
	add(t, b, hash, "uid", cpu, 500, t0.Add(5*time.Minute)) // next window
	add(t, b, hash, "uid", eph, 42, t0)
	if s := b.Stats(); s.Filed != 3 || s.Pending != 0 {
		t.Fatalf("stats %+v", s)
	}
	// A wider window (BallastConfig's retention changed the layout) takes later samples.
	b.SetWindow(15 * time.Minute)
	add(t, b, hash, "uid", mem, 7<<20, t0.Add(10*time.Minute))
	got := summarize(b.Take(0))
	want := []summary{
		{hash + "//ephemeral-storage/usage", t0.Unix(), 1, 42, 42},
		{hash + "/app/cpu/usage", t0.Unix(), 10, 100, 109},
		{hash + "/app/memory/usage", t0.Unix(), 1, 7 << 20, 7 << 20},
		{hash + "/app/cpu/usage", t0.Add(5 * time.Minute).Unix(), 1, 500, 500},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("windows (-want +got):\n%s", diff)
	}
	if ups := b.Take(0); len(ups) != 0 {
		t.Errorf("Take left %d windows behind", len(ups))
	}
	if err := b.Add(hash, "", cpu, -1, t0); !errors.Is(err, series.ErrInvalidValue) {
		t.Errorf("negative sample: err %v", err)
	}
}

func TestTakeAtMostOldestFirst(t *testing.T) {
	b := New(testWindow, Limits{Filed: 100, Pending: 100})
	add(t, b, hash, "", cpu, 1, t0.Add(10*time.Minute))
	add(t, b, hash, "", cpu, 1, t0)
	add(t, b, hash, "", mem, 1, t0.Add(5*time.Minute))
	first := summarize(b.Take(2))
	if len(first) != 2 || first[0].Start != t0.Unix() || first[1].Start != t0.Add(5*time.Minute).Unix() {
		t.Errorf("first batch %+v", first)
	}
	if rest := b.Take(2); len(rest) != 1 {
		t.Errorf("second batch %d windows", len(rest))
	}
}

func TestPendingSamplesAreFiledUnderTheHash(t *testing.T) {
	b := New(testWindow, Limits{Filed: 100, Pending: 100})
	add(t, b, "", "uid-1", mem, 10, t0)
	add(t, b, "", "uid-1", mem, 20, t0.Add(time.Second))
	add(t, b, "", "uid-2", mem, 99, t0)
	add(t, b, hash, "uid-1", mem, 30, t0.Add(2*time.Second)) // stamped meanwhile
	if got := b.PendingPods(); !cmp.Equal(got, []string{"uid-1", "uid-2"}) {
		t.Fatalf("pending pods %v", got)
	}
	if ups := b.Take(0); len(ups) != 1 || ups[0].Hist.N != 1 {
		t.Fatalf("only the filed sample may be taken before filing: %+v", summarize(ups))
	}
	add(t, b, hash, "uid-1", mem, 30, t0.Add(2*time.Second))
	moved := b.File("uid-1", hash)
	if diff := cmp.Diff(Merged{mem: 2}, moved); diff != "" {
		t.Errorf("moved (-want +got):\n%s", diff)
	}
	got := summarize(b.Take(0))
	if diff := cmp.Diff([]summary{{hash + "/app/memory/usage", t0.Unix(), 3, 10, 30}}, got); diff != "" {
		t.Errorf("filed (-want +got):\n%s", diff)
	}
	if n := b.Discard("uid-2", DropUnbound); n != 1 {
		t.Errorf("discarded %d windows", n)
	}
	s := b.Stats()
	if s.Pending != 0 || s.Dropped[DropUnbound] != 1 || s.DroppedSamples[DropUnbound] != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestFullBufferDropsTheOldestWindowFirst(t *testing.T) {
	b := New(testWindow, Limits{Filed: 3, Pending: 2})
	old := t0
	cur := t0.Add(5 * time.Minute)
	add(t, b, hash, "", cpu, 1, old)
	add(t, b, hash, "", cpu, 1, old.Add(time.Second)) // same window: no new entry
	add(t, b, hash, "", cpu, 2, cur)
	add(t, b, hash, "", mem, 2, cur)
	add(t, b, hash, "", eph, 2, cur) // fourth window: the old one goes
	s := b.Stats()
	if s.Filed != 3 || s.Dropped[DropFull] != 1 || s.DroppedSamples[DropFull] != 2 {
		t.Fatalf("stats %+v", s)
	}
	for _, w := range summarize(b.Take(0)) {
		if w.Start != cur.Unix() {
			t.Errorf("kept a window of the older period: %+v", w)
		}
	}

	// Within one window, the entry added first goes first; pending has its own bound.
	add(t, b, "", "uid", cpu, 1, cur)
	add(t, b, "", "uid", mem, 1, cur)
	add(t, b, "", "uid", eph, 1, cur)
	if s := b.Stats(); s.Pending != 2 || s.Dropped[DropPendingFull] != 1 {
		t.Errorf("stats %+v", s)
	}
	b.File("uid", hash)
	var got []string
	for _, w := range summarize(b.Take(0)) {
		got = append(got, w.Series)
	}
	if diff := cmp.Diff([]string{hash + "//ephemeral-storage/usage", hash + "/app/memory/usage"}, got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}

func TestReturnedWindowsMergeAndCountAgainstTheBound(t *testing.T) {
	b := New(testWindow, Limits{Filed: 2, Pending: 2})
	add(t, b, hash, "", cpu, 10, t0)
	add(t, b, hash, "", mem, 10, t0)
	failed := b.Take(0) // the flush fails
	add(t, b, hash, "", cpu, 20, t0.Add(time.Second))
	add(t, b, hash, "", cpu, 30, t0.Add(5*time.Minute)) // a newer window
	b.Return(failed)
	// Three windows for two places: of the older period, the cpu window (created first, by
	// the sample added meanwhile, into which the returned one merged) is dropped.
	s := b.Stats()
	if s.Filed != 2 || s.Dropped[DropFull] != 1 || s.DroppedSamples[DropFull] != 2 {
		t.Fatalf("stats %+v", s)
	}
	got := summarize(b.Take(0))
	want := []summary{
		{hash + "/app/memory/usage", t0.Unix(), 1, 10, 10},
		{hash + "/app/cpu/usage", t0.Add(5 * time.Minute).Unix(), 1, 30, 30},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("windows (-want +got):\n%s", diff)
	}
}

func TestExpireAndReject(t *testing.T) {
	b := New(testWindow, Limits{Filed: 10, Pending: 10})
	add(t, b, hash, "", cpu, 1, t0)
	add(t, b, "", "uid", cpu, 1, t0)
	add(t, b, hash, "", cpu, 1, t0.Add(time.Hour))
	now := t0.Add(2 * time.Hour)
	if n := b.Expire(now, 90*time.Minute); n != 2 {
		t.Errorf("expired %d windows, want 2", n)
	}
	b.Reject(b.Take(0))
	s := b.Stats()
	if s.Filed != 0 || s.Pending != 0 || s.Dropped[DropExpired] != 2 || s.Dropped[DropRejected] != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestWindowsCopiesForTheDebugView(t *testing.T) {
	b := New(testWindow, Limits{Filed: 10, Pending: 10})
	add(t, b, hash, "", cpu, 5, t0)
	add(t, b, "", "uid", mem, 7, t0)
	ws := b.Windows()
	if len(ws) != 2 || ws[0].Pod != "uid" || ws[1].Hash != hash || ws[1].Hist.Max() != 5 {
		t.Fatalf("windows %+v", ws)
	}
	ws[1].Hist.N = 100 // a copy: the buffer is unaffected
	if ups := b.Take(0); ups[0].Hist.N != 1 {
		t.Errorf("Windows returned the live histogram")
	}
}
