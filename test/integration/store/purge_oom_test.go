package store_test

import (
	"context"
	"fmt"
	"github.com/ballastk8s/ballast/pkg/store"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ballastk8s/ballast/pkg/series"
)

// TestPurge fills every kind of key of a profile — windows, rollups, index, sets, epoch,
// OOM and pressure streams — and checks that Purge leaves none of them and touches no other profile.
func TestPurge(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p, other := newProfile(), newProfile()
		now := time.Now()
		r := rand.New(rand.NewPCG(6, 6))
		w := mustWriter(t, c, l)
		for _, prof := range []string{p, other} {
			history(t, ctx, w, l, seriesOf(prof), now, 26*time.Hour, r) // two daily rollups
			if _, err := w.AddOOM(ctx, prof, oomEvent(now)); err != nil {
				t.Fatal(err)
			}
			if err := w.AddPressure(ctx, []store.PressureEntry{{Profile: prof, Reading: pressureReading(now, 200_000)}}); err != nil {
				t.Fatal(err)
			}
		}
		raw := c.Raw()
		for _, prof := range []string{p, other} { // the day-0 backfill's marker
			if err := raw.Do(ctx, raw.B().Set().Key(series.BackfillKey(prof)).Value("history: backfilled").Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		rd := mustReader(t, c, l)
		if _, err := rd.Read(ctx, p, now); err != nil { // compacts, so rollups and the epoch exist
			t.Fatal(err)
		}
		// A rollup left as a hash by a version before packed rollups.
		members, err := raw.Do(ctx, raw.B().Zrange().Key(series.RollupsKey(p)).Min("0").Max("0").Build()).AsStrSlice()
		if err != nil || len(members) != 1 {
			t.Fatalf("rollups of %s: %v, %v", p, members, err)
		}
		if err := raw.Do(ctx, raw.B().Hset().Key(series.LegacyRollupKeyOf(p, members[0])).FieldValue().FieldValue("n", "1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		// Every family of keys must be present before the purge, or the test proves nothing.
		for _, pattern := range series.PurgePatterns(p) {
			if len(scanKeys(t, ctx, c, pattern)) == 0 {
				t.Fatalf("no key matches %s before the purge", pattern)
			}
		}
		otherKeys := scanKeys(t, ctx, c, series.ProfilePattern(other))
		want := int64(len(scanKeys(t, ctx, c, series.ProfilePattern(p))))
		deleted, err := c.Purge(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if deleted != want {
			t.Errorf("Purge deleted %d keys, want %d", deleted, want)
		}
		if left := scanKeys(t, ctx, c, series.ProfilePattern(p)); len(left) != 0 {
			t.Errorf("keys left after the purge: %v", left)
		}
		if diff := cmp.Diff(otherKeys, scanKeys(t, ctx, c, series.ProfilePattern(other))); diff != "" {
			t.Errorf("purge touched another profile (-before +after):\n%s", diff)
		}
		got, err := rd.Read(ctx, p, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Errorf("a warm reader still returns %d series after the purge", len(got))
		}
		if deleted, err := c.Purge(ctx, p); err != nil || deleted != 0 {
			t.Errorf("second purge = %d, %v; want 0, nil", deleted, err)
		}
	})
}

func oomEvent(at time.Time) series.OOMEvent {
	return series.OOMEvent{
		Container: "app", Pod: "shop/api-1", Node: "node-1",
		At: at.Truncate(time.Millisecond).UTC(), PeakBytes: 512 << 20, LimitBytes: 512 << 20,
	}
}

// TestOOMStream: events come back in order, reading resumes after a given ID, the stream
// expires with the retention and stays capped near OOMMaxLen.
func TestOOMStream(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		l.OOMMaxLen = 10
		p := newProfile()
		w, rd := mustWriter(t, c, l), mustReader(t, c, l)
		now := time.Now()
		var want []series.OOMEvent
		var ids []string
		for i := 0; i < 3; i++ {
			ev := oomEvent(now.Add(time.Duration(i) * time.Second))
			ev.Pod = fmt.Sprintf("shop/api-%d", i)
			id, err := w.AddOOM(ctx, p, ev)
			if err != nil {
				t.Fatal(err)
			}
			want, ids = append(want, ev), append(ids, id)
		}
		events := func(recs []store.OOMRecord) (evs []series.OOMEvent, ids []string) {
			for _, r := range recs {
				evs, ids = append(evs, r.Event), append(ids, r.ID)
			}
			return evs, ids
		}
		cases := map[string]struct {
			after   string
			want    []series.OOMEvent
			wantIDs []string
		}{
			"from the start":   {"", want, ids},
			"after the first":  {ids[0], want[1:], ids[1:]},
			"after the last":   {ids[2], nil, nil},
			"after an old one": {"0-1", want, ids},
		}
		for name, tc := range cases {
			recs, err := rd.ReadOOM(ctx, p, tc.after)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			gotEvs, gotIDs := events(recs)
			if diff := cmp.Diff(tc.want, gotEvs); diff != "" {
				t.Errorf("%s: events (-want +got):\n%s", name, diff)
			}
			if diff := cmp.Diff(tc.wantIDs, gotIDs); diff != "" {
				t.Errorf("%s: ids (-want +got):\n%s", name, diff)
			}
		}
		if ttl := pttl(t, ctx, c, series.OOMKey(p)); ttl < l.TTL()-time.Minute || ttl > l.TTL() {
			t.Errorf("oom stream ttl %v, want about %v", ttl, l.TTL())
		}
		for i := 0; i < 400; i++ {
			if _, err := w.AddOOM(ctx, p, oomEvent(now)); err != nil {
				t.Fatal(err)
			}
		}
		// MAXLEN ~ trims whole stream nodes (100 entries by default), so the length stays
		// below the cap plus one node.
		n, err := c.Raw().Do(ctx, c.Raw().B().Xlen().Key(series.OOMKey(p)).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if n > l.OOMMaxLen+100 {
			t.Errorf("oom stream holds %d entries, want at most about %d", n, l.OOMMaxLen)
		}
		if _, err := w.AddOOM(ctx, p, series.OOMEvent{Container: "app"}); err == nil {
			t.Error("AddOOM accepted an event without a time")
		}
	})
}
