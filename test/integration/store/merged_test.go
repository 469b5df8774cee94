package store_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// TestReaderMergesClosedDays: with a week of daily rollups, a warm reader — which merges
// the closed days into one histogram per series — returns exactly the rollups that start
// within the retention window, hour by hour across three day boundaries (the oldest day
// leaving each time), as a fresh reader does; it loads again about once a day, not every
// read; it holds at most three histograms per series, and two from when yesterday has
// settled (a quarter of a day after midnight) until the profile's daily reload; a window
// a few days late, whose day is merged, is counted without being folded; and a flush of
// yesterday's three hours late, before yesterday settles, is folded into yesterday's
// rollup.
func TestReaderMergesClosedDays(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		ids := seriesOf(p)[:2]
		today := l.RollupStart(time.Now())
		r := rand.New(rand.NewPCG(14, 14))
		raw := c.Raw()
		type day struct {
			start time.Time
			hists map[series.SeriesID]*series.Histogram
		}
		var days []day
		for d := 0; d <= 8; d++ {
			start := today.AddDate(0, 0, -d)
			if !l.RollupExpiry(start).After(time.Now()) {
				continue // would expire at once: beyond retention anyway
			}
			dd := day{start: start, hists: map[series.SeriesID]*series.Histogram{}}
			for _, id := range ids {
				h := window(t, r, start.Add(time.Duration(r.IntN(23))*time.Hour), 1+r.IntN(20), gen(id))
				dd.hists[id] = h
				b, err := series.Pack(h).MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				m := series.Member(id, start)
				for _, res := range raw.DoMulti(ctx,
					raw.B().Set().Key(series.RollupKeyOf(p, m)).Value(string(b)).Exat(l.RollupExpiry(start)).Build(),
					raw.B().Zadd().Key(series.RollupsKey(p)).ScoreMember().ScoreMember(float64(start.Unix()), m).Build()) {
					if err := res.Error(); err != nil {
						t.Fatal(err)
					}
				}
			}
			days = append(days, dd)
		}
		// A window three days late: its day is among the merged ones.
		lateStart := today.AddDate(0, 0, -3).Add(5 * time.Hour)
		late := window(t, r, lateStart, 7, gen(ids[0]))
		if err := mustWriter(t, c, l).Flush(ctx, []series.WindowUpdate{{Series: ids[0], Start: lateStart, Hist: late}}); err != nil {
			t.Fatal(err)
		}
		// Flushed three hours after midnight into yesterday's last window (an agent back
		// from an outage): folded, since yesterday has not settled yet.
		lateYesterday := today.Add(-l.Window)
		lateFlushAt := today.Add(3 * time.Hour)
		lateY := window(t, r, lateYesterday, 5, gen(ids[1]))
		lateYWritten := false
		expect := func(at time.Time) map[series.SeriesID]*series.Histogram {
			want := map[series.SeriesID]*series.Histogram{}
			add := func(id series.SeriesID, h *series.Histogram) {
				if want[id] == nil {
					want[id] = &series.Histogram{}
				}
				want[id].Merge(h)
			}
			for _, d := range days {
				if !d.start.Before(l.Cutoff(at)) {
					for id, h := range d.hists {
						add(id, h)
					}
				}
			}
			if !lateStart.Before(l.Cutoff(at)) {
				add(ids[0], late)
			}
			if lateYWritten {
				add(ids[1], lateY)
			}
			return want
		}
		rd := mustReader(t, c, l)
		steps := 0
		for at := today.Add(30 * time.Minute); at.Before(today.Add(72 * time.Hour)); at = at.Add(time.Hour) {
			if !lateYWritten && at.After(lateFlushAt) {
				if err := mustWriter(t, c, l).Flush(ctx, []series.WindowUpdate{{Series: ids[1], Start: lateYesterday, Hist: lateY}}); err != nil {
					t.Fatal(err)
				}
				lateYWritten = true
			}
			got, err := rd.Read(ctx, p, at)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(expect(at), got); diff != "" {
				t.Fatalf("warm read at today+%v (-want +got):\n%s", at.Sub(today), diff)
			}
			fresh, err := mustReader(t, c, l).Read(ctx, p, at)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fresh, got); diff != "" {
				t.Fatalf("warm and fresh reads differ at today+%v (-fresh +warm):\n%s", at.Sub(today), diff)
			}
			// Per series: the merged days and today; from the profile's daily reload until
			// midnight the oldest day too, from midnight until yesterday settles yesterday
			// too. And the late window, pending as a window.
			perSeries := 3
			if since := at.Sub(l.RollupStart(at)); since >= l.Rollup/4 && since < l.Rollup-l.ReloadMargin(p) {
				perSeries = 2
			}
			if n := rd.Cached(p); n > perSeries*len(ids)+1 {
				t.Errorf("at today+%v the reader holds %d histograms, want at most %d per series and the late window", at.Sub(today), n, perSeries)
			}
			steps++
		}
		st := rd.Stats()
		if st.Merged == 0 {
			t.Fatal("no rollup was merged: the test does not exercise merged days")
		}
		// The first load merges the oldest day too, so the next is due before it leaves the
		// retention window, the same day (ReloadMargin: up to half a day before midnight),
		// and each next a day later: 3 or 4 loads in 3 days, not one per read.
		if st.Reloads < 3 || st.Reloads > 4 {
			t.Errorf("%d loads over %d reads across three day boundaries, want 3–4", st.Reloads, steps)
		}
		if st.Compacted != 1 {
			t.Errorf("%d windows folded, want 1: yesterday's late flush (the late window's day is merged and must stay a window)", st.Compacted)
		}
		pending, err := raw.Do(ctx, raw.B().Smembers().Key(series.PendingKey(p)).Build()).AsStrSlice()
		if err != nil || len(pending) != 1 {
			t.Errorf("pending windows %v (%v), want the late one", pending, err)
		}
	})
}
