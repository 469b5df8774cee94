package store_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// TestLegacyRollups: a rollup stored as a hash, the way versions before packed rollups
// wrote it, is read as it is (history survives the upgrade), and the first compaction into
// it replaces the hash with a packed rollup holding both.
func TestLegacyRollups(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		ids := seriesOf(p)[:2]
		now := l.RollupStart(time.Now()).Add(12 * time.Hour)
		r := rand.New(rand.NewPCG(11, 11))
		w := mustWriter(t, c, l)
		want := history(t, ctx, w, l, ids, now.Add(-2*time.Hour), time.Hour, r)
		folded := now.Add(-time.Hour + l.Grace + l.FoldDelay(p) + time.Second)
		if _, err := mustReader(t, c, l).Read(ctx, p, folded); err != nil {
			t.Fatal(err)
		}
		raw := c.Raw()
		members, err := raw.Do(ctx, raw.B().Zrange().Key(series.RollupsKey(p)).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil || len(members) != len(ids) {
			t.Fatalf("rollups listed: %v (%v), want one per series", members, err)
		}
		// Store each rollup back as the hash an earlier version wrote, with its expiry.
		for _, m := range members {
			key, legacy := series.RollupKeyOf(p, m), series.LegacyRollupKeyOf(p, m)
			b, err := raw.Do(ctx, raw.B().Get().Key(key).Build()).AsBytes()
			if err != nil {
				t.Fatal(err)
			}
			packed, err := series.UnmarshalPacked(b)
			if err != nil {
				t.Fatal(err)
			}
			ttl := pttl(t, ctx, c, key)
			hset := raw.B().Hset().Key(legacy).FieldValue()
			f := packed.Unpack().WireFields()
			for i := 0; i < len(f); i += 2 {
				hset = hset.FieldValue(f[i], f[i+1])
			}
			for _, cmd := range []valkey.Completed{
				hset.Build(),
				raw.B().Pexpire().Key(legacy).Milliseconds(ttl.Milliseconds()).Build(),
				raw.B().Del().Key(key).Build(),
			} {
				if err := raw.Do(ctx, cmd).Error(); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := mustReader(t, c, l).Read(ctx, p, folded)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("read of legacy rollups (-want +got):\n%s", diff)
		}
		later := history(t, ctx, w, l, ids, now, 30*time.Minute, r)
		for _, id := range ids {
			want[id].Merge(later[id])
		}
		at := now.Add(l.Window + l.Grace + l.FoldDelay(p) + time.Second)
		rd := mustReader(t, c, l)
		for _, name := range []string{"the fold into legacy rollups", "the next read"} {
			got, err := rd.Read(ctx, p, at)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", name, diff)
			}
		}
		if rd.Stats().Compacted == 0 {
			t.Fatal("nothing folded: the test does not exercise a compaction into a legacy rollup")
		}
		for _, m := range members {
			n, err := raw.Do(ctx, raw.B().Exists().Key(series.RollupKeyOf(p, m), series.LegacyRollupKeyOf(p, m)).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			typ, _ := raw.Do(ctx, raw.B().Type().Key(series.RollupKeyOf(p, m)).Build()).ToString()
			if n != 1 || typ != "string" {
				t.Errorf("rollup %s: %d keys, packed one of type %q; want the packed rollup alone", m, n, typ)
			}
		}
		got, err = mustReader(t, c, l).Read(ctx, p, at)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("a fresh reader after the fold (-want +got):\n%s", diff)
		}
	})
}

// TestDamagedRollup: a packed rollup that does not decode fails the profile's read with an
// error that names it, and the other profiles read on.
func TestDamagedRollup(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		bad, good := newProfile(), newProfile()
		now := l.RollupStart(time.Now()).Add(12 * time.Hour)
		r := rand.New(rand.NewPCG(12, 12))
		w := mustWriter(t, c, l)
		var want map[series.SeriesID]*series.Histogram
		for _, p := range []string{bad, good} {
			want = history(t, ctx, w, l, seriesOf(p)[:1], now.Add(-2*time.Hour), time.Hour, r)
		}
		folded := now.Add(-time.Hour + l.Grace + l.FoldDelay(bad) + time.Second)
		folded = folded.Add(l.FoldDelay(good))
		for _, p := range []string{bad, good} {
			if _, err := mustReader(t, c, l).Read(ctx, p, folded); err != nil {
				t.Fatal(err)
			}
		}
		raw := c.Raw()
		m := series.Member(seriesOf(bad)[0], l.RollupStart(now))
		if err := raw.Do(ctx, raw.B().Set().Key(series.RollupKeyOf(bad, m)).Value("\x01\x05garbage").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		rd := mustReader(t, c, l)
		if _, err := rd.Read(ctx, bad, folded); err == nil {
			t.Fatal("a damaged rollup was read without an error")
		} else if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not name the rollup %s", err, m)
		}
		got, err := rd.Read(ctx, good, folded)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the other profile (-want +got):\n%s", diff)
		}
	})
}
