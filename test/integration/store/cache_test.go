package store_test

import (
	"context"
	"github.com/ballastk8s/ballast/pkg/store"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ballastk8s/ballast/pkg/series"
)

// history writes windows of every series from ago up to the window holding now and returns
// what it wrote, merged per series.
func history(t *testing.T, ctx context.Context, w *store.Writer, l series.Layout, ids []series.SeriesID, now time.Time, ago time.Duration, r *rand.Rand) map[series.SeriesID]*series.Histogram {
	t.Helper()
	want := map[series.SeriesID]*series.Histogram{}
	var batch []series.WindowUpdate
	for start := series.WindowStart(now.Add(-ago), l.Window); !start.After(now); start = start.Add(l.Window) {
		for _, id := range ids {
			h := window(t, r, start, 1+r.IntN(10), gen(id))
			batch = append(batch, series.WindowUpdate{Series: id, Start: start, Hist: h})
			if want[id] == nil {
				want[id] = &series.Histogram{}
			}
			want[id].Merge(h)
		}
	}
	if err := w.Flush(ctx, batch); err != nil {
		t.Fatal(err)
	}
	return want
}

// liveWindows counts the windows of the last hour still open for writers at now (not
// closed): a warm read reads them again, while closed ones wait for their fold in the
// reader's cache.
func liveWindows(l series.Layout, now time.Time) int {
	n := 0
	for start := series.WindowStart(now.Add(-time.Hour), l.Window); !start.After(now); start = start.Add(l.Window) {
		if !l.Closed(start, now) {
			n++
		}
	}
	return n
}

// openWindows counts the windows of the last hour that profile's reader still reads as
// open at now (not yet folded).
func openWindows(l series.Layout, profile string, now time.Time) int {
	n := 0
	for start := series.WindowStart(now.Add(-time.Hour), l.Window); !start.After(now); start = start.Add(l.Window) {
		if !l.Folds(profile, start, now) {
			n++
		}
	}
	return n
}

// checkedRead reads profile p at at, compares the result with want and returns what the
// read cost.
func checkedRead(t *testing.T, ctx context.Context, rd *store.Reader, p string, at time.Time, want map[series.SeriesID]*series.Histogram, what string) store.ReaderStats {
	t.Helper()
	before := rd.Stats()
	got, err := rd.Read(ctx, p, at)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
	return delta(before, rd.Stats())
}

func delta(a, b store.ReaderStats) store.ReaderStats {
	return store.ReaderStats{
		Commands: b.Commands - a.Commands, RoundTrips: b.RoundTrips - a.RoundTrips, WindowsRead: b.WindowsRead - a.WindowsRead, RollupsRead: b.RollupsRead - a.RollupsRead,
		Compacted: b.Compacted - a.Compacted, Reloads: b.Reloads - a.Reloads,
	}
}

// TestReaderCache: once warm, a read costs a fixed number of commands and fetches only the
// open windows; late writes into closed windows, new samples and new series still show up.
func TestReaderCache(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		ids := seriesOf(p)
		// Just after a window closed: the previous window waits for its fold delay, so the
		// warm reads below serve it from the cache.
		now := series.WindowStart(time.Now(), l.Window).Add(l.Grace + time.Second)
		r := rand.New(rand.NewPCG(4, 4))
		w := mustWriter(t, c, l)
		want := history(t, ctx, w, l, ids, now, 2*time.Hour, r)
		rd := mustReader(t, c, l)
		read := func(name string, at time.Time) store.ReaderStats {
			t.Helper()
			return checkedRead(t, ctx, rd, p, at, want, name)
		}
		cold := read("cold read", now)
		if cold.Reloads != 1 || cold.Compacted == 0 {
			t.Errorf("cold read: %+v, want one load and compaction of the closed windows", cold)
		}
		open := int64(liveWindows(l, now) * len(ids))
		// Warm: one round trip, no script: GET of the epoch, SMEMBERS of the pending set, an
		// HGETALL of each window the last read found open for writers, GET of the epoch again.
		wantWarm := store.ReaderStats{Commands: 3 + open, RoundTrips: 1, WindowsRead: open}
		if diff := cmp.Diff(wantWarm, read("warm read", now)); diff != "" {
			t.Errorf("warm read issued (-want +got):\n%s", diff)
		}

		// New samples in the open window, a late flush into a window closed an hour ago and a
		// new series.
		late := series.WindowStart(now.Add(-time.Hour), l.Window)
		cur := series.WindowStart(now, l.Window)
		fresh := series.SeriesID{Profile: p, Container: "init-sidecar", Resource: series.ResourceCPU, Signal: series.SignalUsage}
		var batch []series.WindowUpdate
		for _, u := range []struct {
			id    series.SeriesID
			start time.Time
		}{{ids[0], cur}, {ids[1], late}, {fresh, cur}} {
			h := window(t, r, u.start, 3, gen(u.id))
			batch = append(batch, series.WindowUpdate{Series: u.id, Start: u.start, Hist: h})
			if want[u.id] == nil {
				want[u.id] = &series.Histogram{}
			}
			want[u.id].Merge(h)
		}
		if err := w.Flush(ctx, batch); err != nil {
			t.Fatal(err)
		}
		// The listing shows two windows the last read did not know (the late one and the new
		// series'): one more round trip reads them (and the epoch), and one compaction call
		// folds the late one.
		wantChanged := store.ReaderStats{Commands: 3 + open + 3 + 1, RoundTrips: 3, WindowsRead: open + 2, RollupsRead: 1, Compacted: 1}
		if diff := cmp.Diff(wantChanged, read("read after new samples", now)); diff != "" {
			t.Errorf("read after new samples issued (-want +got):\n%s", diff)
		}

		// A profile whose windows are all compacted costs three commands in one round trip
		// (the epoch, the empty pending set, the epoch) and reads nothing.
		idle := newProfile()
		idleIDs := seriesOf(idle)
		history(t, ctx, w, l, idleIDs, now.Add(-3*time.Hour), time.Hour, r)
		if _, err := rd.Read(ctx, idle, now); err != nil {
			t.Fatal(err)
		}
		before := rd.Stats()
		got, err := rd.Read(ctx, idle, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(idleIDs) {
			t.Errorf("idle profile: %d series, want %d", len(got), len(idleIDs))
		}
		if diff := cmp.Diff(store.ReaderStats{Commands: 3, RoundTrips: 1}, delta(before, rd.Stats())); diff != "" {
			t.Errorf("warm read of an idle profile issued (-want +got):\n%s", diff)
		}
	})
}

// TestConcurrentReaders: when another reader compacts, a reader notices by the epoch and
// reloads the profile's rollups instead of double counting or missing windows.
func TestConcurrentReaders(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		now := time.Now()
		r := rand.New(rand.NewPCG(5, 5))
		w := mustWriter(t, c, l)
		want := history(t, ctx, w, l, seriesOf(p), now, time.Hour, r)
		a, b := mustReader(t, c, l), mustReader(t, c, l)
		for _, rd := range []*store.Reader{a, b, a} {
			got, err := rd.Read(ctx, p, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		}
		later := now.Add(l.Window + l.Grace + l.FoldDelay(p) + time.Second) // every window written folds now
		gotA, err := a.Read(ctx, p, later)
		if err != nil {
			t.Fatal(err)
		}
		before := b.Stats()
		gotB, err := b.Read(ctx, p, later)
		if err != nil {
			t.Fatal(err)
		}
		for name, got := range map[string]map[series.SeriesID]*series.Histogram{"compacting reader": gotA, "other reader": gotB} {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s after compaction (-want +got):\n%s", name, diff)
			}
		}
		if d := delta(before, b.Stats()); d.Reloads != 1 || d.Compacted != 0 {
			t.Errorf("other reader: %+v, want one reload and no compaction", d)
		}
	})
}

// TestLateFlushDuringCompaction: a flush into a closed window after the reader read it and
// before it compacted it makes the compaction skip that window's rollup instead of deleting
// the late samples; the read counts what it read, and the next read folds the window with
// the late samples, so nothing is lost or counted twice.
func TestLateFlushDuringCompaction(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		ids := seriesOf(p)
		now := time.Now()
		r := rand.New(rand.NewPCG(6, 6))
		w := mustWriter(t, c, l)
		want := history(t, ctx, w, l, ids, now, 90*time.Minute, r)
		before := map[series.SeriesID]*series.Histogram{}
		for id, h := range want {
			before[id] = h.Clone()
		}
		closed := series.WindowStart(now.Add(-60*time.Minute), l.Window)
		late := window(t, r, closed, 4, gen(ids[0]))
		want[ids[0]].Merge(late)
		rd := mustReader(t, c, l)
		fired := 0
		store.SetBeforeCompact(rd, func() {
			if fired++; fired == 1 {
				if err := w.Flush(ctx, []series.WindowUpdate{{Series: ids[0], Start: closed, Hist: late}}); err != nil {
					t.Error(err)
				}
			}
		})
		got, err := rd.Read(ctx, p, now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, got); diff != "" {
			t.Errorf("read racing the late flush: want what was read before it (-want +got):\n%s", diff)
		}
		skippedFold := rd.Stats().Compacted
		for _, name := range []string{"next read", "cold reader"} {
			rr := rd
			if name == "cold reader" {
				rr = mustReader(t, c, l)
			}
			got, err := rr.Read(ctx, p, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: late samples lost or counted twice (-want +got):\n%s", name, diff)
			}
		}
		closedWindows := 0
		for s := series.WindowStart(now.Add(-90*time.Minute), l.Window); l.Folds(p, s, now); s = s.Add(l.Window) {
			closedWindows++
		}
		if total := rd.Stats().Compacted; skippedFold >= int64(closedWindows*len(ids)) || total != int64(closedWindows*len(ids)) {
			t.Errorf("compacted %d windows in the racing read and %d in all, want fewer than %d and then exactly %d",
				skippedFold, total, closedWindows*len(ids), closedWindows*len(ids))
		}
	})
}

// TestPendingSetAfterBacklog: a backlog (here 12 h of windows no reader folded) pushes the
// pending set past Valkey's compact set encoding; once the backlog is compacted the set is
// rebuilt compact, so it does not keep a hash table sized for the backlog for the rest of
// its life.
func TestPendingSetAfterBacklog(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		ids := seriesOf(p)
		now := time.Now()
		r := rand.New(rand.NewPCG(6, 6))
		want := history(t, ctx, mustWriter(t, c, l), l, ids, now, 12*time.Hour, r)
		key := series.PendingKey(p)
		encoding := func() string {
			t.Helper()
			enc, err := c.Raw().Do(ctx, c.Raw().B().ObjectEncoding().Key(key).Build()).ToString()
			if err != nil {
				t.Fatal(err)
			}
			return enc
		}
		if enc := encoding(); enc != "hashtable" {
			t.Fatalf("pending set of 12 h of windows is %q, want the backlog to have made it a hashtable", enc)
		}
		got, err := mustReader(t, c, l).Read(ctx, p, now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("read after the backlog: (-want +got):\n%s", diff)
		}
		if enc := encoding(); enc != "listpack" {
			t.Errorf("pending set after compaction is %q, want listpack", enc)
		}
		if ttl := pttl(t, ctx, c, key); ttl <= 0 || ttl > l.TTL() {
			t.Errorf("pending set TTL after its rebuild: %v, want (0, %v]", ttl, l.TTL())
		}
		members, err := c.Raw().Do(ctx, c.Raw().B().Scard().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if open := int64(openWindows(l, p, now) * len(ids)); members != open {
			t.Errorf("pending set holds %d windows after compaction, want the %d open ones", members, open)
		}
	})
}

// TestCompactionRacingAnotherReader: reader A reads the windows, then — before A's
// compaction runs — a late flush lands in an old window of the same rollup and reader B
// folds it. A's compaction was built from a rollup cache that is now stale (it lacks the
// late samples) while the windows A read are unchanged, so only the epoch tells: the script
// must refuse to write A's whole rollup; A reloads and folds again, and no sample is lost
// or counted twice.
func TestCompactionRacingAnotherReader(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		ids := seriesOf(p)
		now := l.RollupStart(time.Now()).Add(12 * time.Hour) // noon: every window below is in one daily rollup
		r := rand.New(rand.NewPCG(8, 8))
		w := mustWriter(t, c, l)
		want := history(t, ctx, w, l, ids, now, time.Hour, r)
		lateStart := series.WindowStart(now.Add(-3*time.Hour), l.Window)
		late := window(t, r, lateStart, 5, gen(ids[0]))
		want[ids[0]].Merge(late)
		a, b := mustReader(t, c, l), mustReader(t, c, l)
		// B folds only what closed by an hour ago (the late window); A, later, folds all.
		tB, tA := now.Add(-time.Hour), now.Add(l.Window+l.Grace+l.FoldDelay(p)+time.Second)
		// Warm, at the start of the history: nothing folds yet, A caches the (empty) rollups.
		if _, err := a.Read(ctx, p, tB); err != nil {
			t.Fatal(err)
		}
		raced := false
		store.SetBeforeCompact(a, func() {
			if raced {
				return
			}
			raced = true
			if err := w.Flush(ctx, []series.WindowUpdate{{Series: ids[0], Start: lateStart, Hist: late}}); err != nil {
				t.Error(err)
			}
			before := b.Stats()
			if _, err := b.Read(ctx, p, tB); err != nil {
				t.Error(err)
			}
			if d := delta(before, b.Stats()); d.Compacted != 1 {
				t.Errorf("reader B folded %d windows, want the late one: the race was not staged", d.Compacted)
			}
		})
		if d := checkedRead(t, ctx, a, p, tA, want, "reader A after the race"); d.Reloads != 1 {
			t.Errorf("reader A: %+v, want one reload after the refused compaction", d)
		}
		for name, rd := range map[string]*store.Reader{"reader A again": a, "reader B": b, "cold reader": mustReader(t, c, l)} {
			got, err := rd.Read(ctx, p, tA)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", name, diff)
			}
		}
		pending, err := c.Raw().Do(ctx, c.Raw().B().Scard().Key(series.PendingKey(p)).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if pending != 0 {
			t.Errorf("%d windows still pending after every reader folded at %v", pending, tA)
		}
	})
}

// TestSettledWindowLateFlush: a window read after it closed is served from the reader's
// cache until it folds; a late flush into it meanwhile is not lost: the fold sees the changed
// count, skips, and the window is read again and folded with the late samples.
func TestSettledWindowLateFlush(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		for l.FoldDelay(p) < 2*time.Second { // a delay that leaves room between the reads
			p = newProfile()
		}
		ids := seriesOf(p)
		cur := series.WindowStart(time.Now(), l.Window)
		prev := cur.Add(-l.Window)
		closedAt := cur.Add(l.Grace + time.Second)             // prev closed, not folded
		foldedAt := closedAt.Add(l.FoldDelay(p) + time.Second) // prev folds
		r := rand.New(rand.NewPCG(9, 9))
		w := mustWriter(t, c, l)
		want := history(t, ctx, w, l, ids, prev, 0, r) // one window per series: prev
		rd := mustReader(t, c, l)
		// While prev is open every read reads it again, so the reader keeps only its name
		// between reads, not its histogram.
		checkedRead(t, ctx, rd, p, prev.Add(l.Window/2), want, "read while open")
		if n := rd.Cached(p); n != 0 {
			t.Errorf("after reading open windows the reader holds %d histograms, want 0 (they are read again)", n)
		}
		if _, err := rd.Read(ctx, p, closedAt); err != nil { // reads prev closed: settled
			t.Fatal(err)
		}
		if n := rd.Cached(p); n != len(ids) {
			t.Errorf("after reading closed windows the reader holds %d histograms, want %d (settled, kept until they fold)", n, len(ids))
		}
		late := window(t, r, prev, 3, gen(ids[0]))
		if err := w.Flush(ctx, []series.WindowUpdate{{Series: ids[0], Start: prev, Hist: late}}); err != nil {
			t.Fatal(err)
		}
		if d := checkedRead(t, ctx, rd, p, closedAt, want, "read before the fold"); d.WindowsRead != 0 {
			t.Errorf("read before the fold read %d windows, want the settled ones from the cache", d.WindowsRead)
		}
		want[ids[0]].Merge(late)
		for _, name := range []string{"fold (skipped: changed)", "next read (folds)", "after the fold"} {
			got, err := rd.Read(ctx, p, foldedAt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" && name != "fold (skipped: changed)" {
				t.Errorf("%s: late samples lost or counted twice (-want +got):\n%s", name, diff)
			}
		}
		if got, want := rd.Stats().Compacted, int64(len(ids)); got != want {
			t.Errorf("compacted %d windows, want %d", got, want)
		}
		if n, err := c.Raw().Do(ctx, c.Raw().B().Scard().Key(series.PendingKey(p)).Build()).AsInt64(); err != nil || n != 0 {
			t.Errorf("pending windows after the fold: %d (%v), want 0", n, err)
		}
	})
}

// TestRollupOutlivesItsIndex: a rollup hash can outlive the profile's epoch and rollup set
// (they expire a TTL after the last compaction, a rollup a TTL after its own end). A reader
// that then finds no rollup listed must still add to the surviving hash rather than
// overwrite it.
func TestRollupOutlivesItsIndex(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		ids := seriesOf(p)[:1]
		now := l.RollupStart(time.Now()).Add(12 * time.Hour)
		r := rand.New(rand.NewPCG(10, 10))
		w := mustWriter(t, c, l)
		want := history(t, ctx, w, l, ids, now.Add(-2*time.Hour), time.Hour, r)
		folded := now.Add(-time.Hour + l.Grace + l.FoldDelay(p) + time.Second)
		if _, err := mustReader(t, c, l).Read(ctx, p, folded); err != nil {
			t.Fatal(err)
		}
		// The epoch and the rollup set are gone (expired); the rollup hash is not.
		if err := c.Raw().Do(ctx, c.Raw().B().Del().Key(series.EpochKey(p), series.RollupsKey(p)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		later := history(t, ctx, w, l, ids, now, 30*time.Minute, r)
		want[ids[0]].Merge(later[ids[0]])
		at := now.Add(l.Window + l.Grace + l.FoldDelay(p) + time.Second)
		if _, err := mustReader(t, c, l).Read(ctx, p, at); err != nil {
			t.Fatal(err)
		}
		got, err := mustReader(t, c, l).Read(ctx, p, at)
		if err != nil {
			t.Fatal(err)
		}
		// Read the surviving rollup itself.
		b, err := c.Raw().Do(ctx, c.Raw().B().Get().Key(series.RollupKey(ids[0], l.RollupStart(now))).Build()).AsBytes()
		if err != nil {
			t.Fatal(err)
		}
		packed, err := series.UnmarshalPacked(b)
		if err != nil {
			t.Fatalf("the surviving rollup was overwritten: %v", err)
		}
		h := packed.Unpack()
		if diff := cmp.Diff(want[ids[0]], h); diff != "" {
			t.Errorf("surviving rollup (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
}
