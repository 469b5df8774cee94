package store_test

import (
	"context"
	"errors"
	"github.com/ballastk8s/ballast/pkg/store"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ballastk8s/ballast/pkg/series"
)

func seriesOf(p string) []series.SeriesID {
	return []series.SeriesID{
		{Profile: p, Container: "app", Resource: series.ResourceCPU, Signal: series.SignalUsage},
		{Profile: p, Container: "app", Resource: series.ResourceMemory, Signal: series.SignalUsage},
		{Profile: p, Container: "app", Resource: series.ResourceMemory, Signal: series.SignalPeak},
		{Profile: p, Container: "sidecar", Resource: series.ResourceCPU, Signal: series.SignalUsage},
		{Profile: p, Resource: series.ResourceEphemeralStorage, Signal: series.SignalUsage},
	}
}

// gen returns whole-number samples small enough that every sum of squares stays below
// 2^53, so sums read back exactly.
func gen(id series.SeriesID) func(*rand.Rand) float64 {
	if id.Resource == series.ResourceCPU {
		return millicores
	}
	return func(r *rand.Rand) float64 { return float64(500000 + r.IntN(500000)) }
}

// TestConcurrentWriters has six simulated nodes write the same series of one profile at
// once, window after window, each over its own connection; the reader must return exactly
// the merge of everything they wrote — before and after compaction, warm and cold.
func TestConcurrentWriters(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, url string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		now := time.Now()
		const nodes, windows = 6, 12
		var mu sync.Mutex
		want := map[series.SeriesID]*series.Histogram{}
		var wg sync.WaitGroup
		errs := make(chan error, nodes)
		for node := 0; node < nodes; node++ {
			nc := open(t, url)
			w, err := store.NewWriter(nc, l)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func(node int) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(node), 99))
				for k := windows - 1; k >= 0; k-- {
					start := series.WindowStart(now, l.Window).Add(-time.Duration(k) * l.Window)
					var batch []series.WindowUpdate
					for _, id := range seriesOf(p) {
						h := window(t, r, start, 1+r.IntN(20), gen(id))
						batch = append(batch, series.WindowUpdate{Series: id, Start: start, Hist: h})
						mu.Lock()
						if want[id] == nil {
							want[id] = &series.Histogram{}
						}
						want[id].Merge(h)
						mu.Unlock()
					}
					if err := w.Flush(ctx, batch); err != nil {
						errs <- err
						return
					}
				}
			}(node)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		warm, err := store.NewReader(c, l)
		if err != nil {
			t.Fatal(err)
		}
		reads := map[string]func() (map[series.SeriesID]*series.Histogram, error){
			"first read (compacts closed windows)": func() (map[series.SeriesID]*series.Histogram, error) { return warm.Read(ctx, p, now) },
			"cold reader":                          func() (map[series.SeriesID]*series.Histogram, error) { return mustReader(t, c, l).Read(ctx, p, now) },
			"warm reader, everything compacted":    func() (map[series.SeriesID]*series.Histogram, error) { return warm.Read(ctx, p, now.Add(time.Hour)) },
			"cold reader, everything compacted": func() (map[series.SeriesID]*series.Histogram, error) {
				return mustReader(t, c, l).Read(ctx, p, now.Add(time.Hour))
			},
		}
		for _, name := range []string{"first read (compacts closed windows)", "cold reader", "warm reader, everything compacted", "cold reader, everything compacted"} {
			got, err := reads[name]()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: merged histograms differ from what the nodes wrote (-want +got):\n%s", name, diff)
			}
		}
		if s := warm.Stats(); s.Compacted != int64(windows*len(seriesOf(p))) {
			t.Errorf("compacted %d windows, want %d", s.Compacted, windows*len(seriesOf(p)))
		}
		ids, err := warm.Series(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != len(seriesOf(p)) {
			t.Errorf("index lists %v, want the %d series written", ids, len(seriesOf(p)))
		}
	})
}

func mustReader(t *testing.T, c *store.Client, l series.Layout) *store.Reader {
	t.Helper()
	r, err := store.NewReader(c, l)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustWriter(t *testing.T, c *store.Client, l series.Layout) *store.Writer {
	t.Helper()
	w, err := store.NewWriter(c, l)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestRetention writes windows inside and outside a 4h retention window: only the retained
// ones count, and every key carries an expiry at its data's end plus retention plus slack.
func TestRetention(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, url string) {
		l := series.DefaultLayout(4 * time.Hour) // 15m windows, 1h rollups, TTL 5h
		p := newProfile()
		id := seriesOf(p)[0]
		now := time.Now()
		r := rand.New(rand.NewPCG(1, 1))
		at := func(ago time.Duration) time.Time { return series.WindowStart(now.Add(-ago), l.Window) }
		starts := map[string]time.Time{
			"expired before written": at(6 * time.Hour),
			"stored, not retained":   at(4*time.Hour + 30*time.Minute),
			"retained, closed":       at(2 * time.Hour),
			"retained, open":         at(0),
		}
		want := map[series.SeriesID]*series.Histogram{id: {}}
		w := mustWriter(t, c, l)
		for name, start := range starts {
			h := window(t, r, start, 10, millicores)
			if err := w.Flush(ctx, []series.WindowUpdate{{Series: id, Start: start, Hist: h}}); err != nil {
				t.Fatal(err)
			}
			if name == "retained, closed" || name == "retained, open" {
				want[id].Merge(h)
			}
		}
		ttls := map[string]struct {
			key      string
			min, max time.Duration
		}{
			"expired window": {series.WindowKey(id, starts["expired before written"]), -2, -2},
			// A window expires TTL after its end: its start lies within one window width of
			// the time it was placed at.
			"old window":      {series.WindowKey(id, starts["stored, not retained"]), 30*time.Minute - time.Second, 30*time.Minute + l.Window},
			"open window":     {series.WindowKey(id, starts["retained, open"]), 5*time.Hour - time.Second, 5*time.Hour + l.Window},
			"series index":    {series.IndexKey(p), 5*time.Hour - time.Minute, 5 * time.Hour},
			"pending windows": {series.PendingKey(p), 5*time.Hour - time.Minute, 5 * time.Hour},
		}
		for name, tc := range ttls {
			if got := pttl(t, ctx, c, tc.key); got < tc.min || got > tc.max {
				t.Errorf("%s %s: ttl %v, want within [%v, %v]", name, tc.key, got, tc.min, tc.max)
			}
		}
		rd := mustReader(t, c, l)
		got, err := rd.Read(ctx, p, now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("retained histogram (-want +got):\n%s", diff)
		}
		rollup := series.RollupKey(id, l.RollupStart(starts["retained, closed"]))
		// Expiry times have one-second resolution and PTTL is read before time.Until: 1s slack.
		if ttl, max := pttl(t, ctx, c, rollup), time.Until(l.RollupExpiry(l.RollupStart(starts["retained, closed"])))+time.Second; ttl <= 0 || ttl > max {
			t.Errorf("rollup %s: ttl %v, want within (0, %v]", rollup, ttl, max)
		}
		for _, k := range []string{series.EpochKey(p), series.RollupsKey(p)} {
			if ttl := pttl(t, ctx, c, k); ttl <= 4*time.Hour || ttl > 5*time.Hour {
				t.Errorf("%s: ttl %v, want about 5h", k, ttl)
			}
		}
		pending, err := c.Raw().Do(ctx, c.Raw().B().Smembers().Key(series.PendingKey(p)).Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{series.Member(id, starts["retained, open"])}, pending); diff != "" {
			t.Errorf("pending windows after compaction (-want +got):\n%s", diff)
		}
	})
}

// TestFlushErrors: invalid updates are refused before anything is sent; a window the server
// refuses fails alone and is reported by index.
func TestFlushErrors(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, url string) {
		l := series.DefaultLayout(0)
		p := newProfile()
		ids := seriesOf(p)
		start := series.WindowStart(time.Now(), l.Window)
		r := rand.New(rand.NewPCG(2, 2))
		h := window(t, r, start, 5, millicores)
		w := mustWriter(t, c, l)
		invalid := map[string]series.WindowUpdate{
			"unaligned start": {Series: ids[0], Start: start.Add(time.Second), Hist: h},
			"no samples":      {Series: ids[0], Start: start, Hist: &series.Histogram{}},
			"samples outside": {Series: ids[0], Start: start.Add(-l.Window), Hist: h},
			"bad profile":     {Series: series.SeriesID{Profile: "NOPE", Resource: "cpu", Signal: "usage"}, Start: start, Hist: h},
		}
		for name, u := range invalid {
			if err := w.Flush(ctx, []series.WindowUpdate{{Series: ids[1], Start: start, Hist: h}, u}); err == nil {
				t.Errorf("%s: Flush accepted it", name)
			}
		}
		if keys := scanKeys(t, ctx, c, series.ProfilePattern(p)); len(keys) != 0 {
			t.Fatalf("a refused flush wrote %v", keys)
		}
		// Make the window of ids[1] a string: the server refuses that update only.
		if err := c.Raw().Do(ctx, c.Raw().B().Set().Key(series.WindowKey(ids[1], start)).Value("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		batch := []series.WindowUpdate{
			{Series: ids[0], Start: start, Hist: h}, {Series: ids[1], Start: start, Hist: h}, {Series: ids[2], Start: start, Hist: h},
		}
		err := w.Flush(ctx, batch)
		var fe *store.FlushError
		if !errors.As(err, &fe) || !cmp.Equal(fe.Failed, []int{1}) {
			t.Fatalf("Flush = %v, want a store.FlushError naming update 1", err)
		}
		// The refused window was never recorded, so readers do not trip over the foreign key.
		got, err := mustReader(t, c, l).Read(ctx, p, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[ids[0]].Count() != 5 || got[ids[2]].Count() != 5 {
			t.Errorf("after a partial flush the store holds %v, want the two accepted windows", got)
		}
	})
}
