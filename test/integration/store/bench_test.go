package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/simagent"
)

// BenchmarkStorage measures, with MEMORY USAGE on a real server, the bytes one series-day
// costs at 10 s sampling (8640 samples a day): the histogram layout after compaction (one
// daily rollup per series, plus the profile's index, rollup set and epoch), the same
// windows left uncompacted, and a raw-sample baseline (one list per series, RPUSH of every
// value as the agent would format it, which Valkey packs as integers). Four series of one
// profile share the per-profile keys. The one-day run charges a quarter of those keys to
// every series-day; the seven-day run (a full default retention window) is the steady
// state.
func BenchmarkStorage(b *testing.B) {
	for _, kind := range []string{"memory", "cpu-steady", "cpu-noisy"} {
		for _, days := range []int{1, 7} {
			b.Run(fmt.Sprintf("%s/%dd", kind, days), func(b *testing.B) {
				ctx := context.Background()
				c := open(b, srv.Valkey.URL())
				var m dayResult
				for b.Loop() {
					m = measureDays(b, ctx, c, days, simagent.DayModels[kind])
				}
				b.ReportMetric(m.raw, "raw-B/series-day")
				b.ReportMetric(m.windows, "windows-B/series-day")
				b.ReportMetric(m.hist, "hist-B/series-day")
				b.ReportMetric(m.raw/m.hist, "raw/hist")
			})
		}
	}
}

type dayResult struct{ raw, windows, hist float64 }

func measureDays(b *testing.B, ctx context.Context, c *store.Client, days int, gen func(*rand.Rand, time.Time) float64) dayResult {
	const nSeries, interval = 4, 10 * time.Second
	// Two weeks of retention keep every simulated window alive; the layout (15m windows,
	// daily rollups) is the default one.
	l := series.DefaultLayout(14 * 24 * time.Hour)
	compacted, uncompacted := newProfile(), newProfile()
	w, rd := mustWriterB(b, c, l), mustReaderB(b, c, l)
	end := time.Now().UTC().Truncate(24 * time.Hour)
	first := end.AddDate(0, 0, -days)
	r := rand.New(rand.NewPCG(42, 42))
	raw := make([][]string, nSeries)
	samples := 0
	for start := first; start.Before(end); start = start.Add(l.Window) {
		var batch []series.WindowUpdate
		for s := 0; s < nSeries; s++ {
			h := &series.Histogram{}
			for at := start; at.Before(start.Add(l.Window)); at = at.Add(interval) {
				v := gen(r, at)
				if err := h.Add(v, at); err != nil {
					b.Fatal(err)
				}
				raw[s] = append(raw[s], strconv.FormatFloat(v, 'f', -1, 64))
				samples++
			}
			for _, p := range []string{compacted, uncompacted} {
				id := series.SeriesID{Profile: p, Container: fmt.Sprintf("c%d", s), Resource: series.ResourceMemory, Signal: series.SignalUsage}
				batch = append(batch, series.WindowUpdate{Series: id, Start: start, Hist: h})
			}
		}
		if err := w.Flush(ctx, batch); err != nil {
			b.Fatal(err)
		}
		if end := start.Add(l.Window); end.Unix()%3600 == 0 { // the control plane reads (at least) hourly
			if _, err := rd.Read(ctx, compacted, end.Add(l.Grace+l.FoldDelay(compacted)+time.Second)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if samples != nSeries*8640*days {
		b.Fatalf("simulated %d samples, want %d", samples, nSeries*8640*days)
	}
	var rawKeys []string
	for s, vals := range raw {
		key := fmt.Sprintf("bench-raw:{%s}:%d", compacted, s)
		rawKeys = append(rawKeys, key)
		for lo := 0; lo < len(vals); lo += 1000 {
			if err := c.Raw().Do(ctx, c.Raw().B().Rpush().Key(key).Element(vals[lo:min(lo+1000, len(vals))]...).Build()).Error(); err != nil {
				b.Fatal(err)
			}
		}
	}
	per := func(keys []string) float64 { return float64(memoryUsage(b, ctx, c, keys)) / float64(nSeries*days) }
	res := dayResult{
		raw:     per(rawKeys),
		windows: per(scanKeys(b, ctx, c, series.ProfilePattern(uncompacted))),
		hist:    per(scanKeys(b, ctx, c, series.ProfilePattern(compacted))),
	}
	for _, p := range []string{compacted, uncompacted} {
		if _, err := c.Purge(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Raw().Do(ctx, c.Raw().B().Del().Key(rawKeys...).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	return res
}

func memoryUsage(b *testing.B, ctx context.Context, c *store.Client, keys []string) int64 {
	cmds := make(valkey.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = c.Raw().B().MemoryUsage().Key(k).Samples(0).Build()
	}
	var total int64
	for _, r := range c.Raw().DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	return total
}

// BenchmarkReadWarm reads many profiles with a warm cache, as the profiles controller does
// every cycle: between cycles every series receives new samples in its open window. It
// reports the commands and hashes one cycle fetches; ns/op is one cycle over all series.
func BenchmarkReadWarm(b *testing.B) {
	const profiles, perProfile = 50, 8
	ctx := context.Background()
	c := open(b, srv.Valkey.URL())
	l := series.DefaultLayout(168 * time.Hour)
	w, rd := mustWriterB(b, c, l), mustReaderB(b, c, l)
	now := time.Now()
	cur := series.WindowStart(now, l.Window)
	r := rand.New(rand.NewPCG(9, 9))
	var ids []series.SeriesID
	var ps []string
	for i := 0; i < profiles; i++ {
		p := newProfile()
		ps = append(ps, p)
		for s := 0; s < perProfile; s++ {
			ids = append(ids, series.SeriesID{Profile: p, Container: fmt.Sprintf("c%d", s), Resource: series.ResourceCPU, Signal: series.SignalUsage})
		}
	}
	sample := func(start time.Time) []series.WindowUpdate {
		batch := make([]series.WindowUpdate, 0, len(ids))
		for _, id := range ids {
			batch = append(batch, series.WindowUpdate{Series: id, Start: start, Hist: window(b, r, start, 5, millicores)})
		}
		return batch
	}
	for start := cur.Add(-6 * time.Hour); !start.After(cur); start = start.Add(l.Window) {
		if err := w.Flush(ctx, sample(start)); err != nil {
			b.Fatal(err)
		}
	}
	readAll := func() {
		for _, p := range ps {
			if _, err := rd.Read(ctx, p, now); err != nil {
				b.Fatal(err)
			}
		}
	}
	readAll() // cold: loads and compacts six hours of windows
	cold := rd.Stats()
	readAll() // settles the script cache on every node
	before := rd.Stats()
	for b.Loop() {
		b.StopTimer()
		if err := w.Flush(ctx, sample(cur)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		readAll()
	}
	d := delta(before, rd.Stats())
	n := float64(b.N)
	b.ReportMetric(float64(d.Commands)/n, "cmds/cycle")
	b.ReportMetric(float64(d.Commands)/n/profiles, "cmds/profile")
	b.ReportMetric(float64(d.WindowsRead)/n, "windows/cycle")
	b.ReportMetric(float64(d.RollupsRead)/n, "rollups/cycle")
	b.ReportMetric(float64(cold.Commands), "cold-cmds")
	b.ReportMetric(float64(len(ids)), "series")
	for _, p := range ps {
		if _, err := c.Purge(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

func mustWriterB(b *testing.B, c *store.Client, l series.Layout) *store.Writer {
	w, err := store.NewWriter(c, l)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

func mustReaderB(b *testing.B, c *store.Client, l series.Layout) *store.Reader {
	r, err := store.NewReader(c, l)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
