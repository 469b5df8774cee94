package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/recommend/feed"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// TestHeartbeatsAndFallbackWrites runs the agent-presence and fallback bookkeeping against
// both deployments: heartbeats round-trip (an expired one is still returned, it carries the
// agent's last flushed turn), cursors only move forward, and fallback windows pool with an
// agent's window of the same series, their share read back with the profile.
func TestHeartbeatsAndFallbackWrites(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, url string) {
		now := time.Now().UTC().Truncate(time.Second)
		l := series.DefaultLayout(0)
		w, err := store.NewWriter(c, l)
		if err != nil {
			t.Fatal(err)
		}
		node := fmt.Sprintf("node-%x", rand.Uint64())
		hb := series.Heartbeat{Node: node, Version: "test", Signals: []string{"cpu", "memory"},
			Since: now.Add(-time.Minute), Through: now.Add(-2 * time.Second), At: now, TTL: 6 * time.Second}
		if err := w.Heartbeat(ctx, hb); err != nil {
			t.Fatal(err)
		}
		r := store.NewProfileReader(url)
		defer r.Close()
		got, bad, err := r.Heartbeats(ctx, now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if bad[node] != nil || !got[node].Through.Equal(hb.Through) || got[node].Live(now.Add(time.Minute)) {
			t.Fatalf("heartbeat of %s read back as %+v (bad %v); want it expired with through %s", node, got[node], bad[node], hb.Through)
		}
		if _, _, err := r.Heartbeats(ctx, now.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if again, _, _ := r.Heartbeats(ctx, now); again[node].Node != "" {
			t.Errorf("a heartbeat older than an hour was not pruned: %+v", again[node])
		}

		profile := newProfile()
		start := series.WindowStart(now, l.Window)
		agent := &series.Histogram{}
		_ = agent.Add(100, start)
		_ = agent.Add(110, start.Add(time.Second))
		if err := w.Flush(ctx, []series.WindowUpdate{{Series: series.SeriesID{Profile: profile, Container: "app",
			Resource: series.ResourceCPU, Signal: series.SignalUsage}, Start: start, Hist: agent}}); err != nil {
			t.Fatal(err)
		}
		fb := &series.Histogram{}
		_ = fb.Add(120, start.Add(2*time.Second))
		fb.MarkFallback(1, 60*time.Second)
		uid := fmt.Sprintf("uid-%x", rand.Uint64())
		ups := []series.WindowUpdate{{Series: series.SeriesID{Profile: profile, Container: "app",
			Resource: series.ResourceCPU, Signal: series.SignalUsage}, Start: start, Hist: fb}}
		if err := r.WriteFallback(ctx, 0, ups, map[string]time.Time{uid: start.Add(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteFallback(ctx, 0, nil, map[string]time.Time{uid: start}); err != nil {
			t.Fatal(err)
		}
		cur, err := r.FallbackCursors(ctx, []string{uid, "absent"})
		if err != nil {
			t.Fatal(err)
		}
		if !cur[uid].Equal(start.Add(2*time.Second)) || !cur["absent"].IsZero() {
			t.Errorf("cursors %v: want %s for %s (never moved back) and none for absent", cur, start.Add(2*time.Second), uid)
		}
		ps, err := r.Read(ctx, profile, now.Add(time.Second), series.DefaultRetention)
		if err != nil {
			t.Fatal(err)
		}
		if fb := feed.Of(ps.Series, ps.OOMs, ps.Nodes).Fallback; fb.Samples != 3 || fb.FallbackSamples != 1 || fb.Resolution != time.Minute {
			t.Errorf("fallback share %+v: want 1 of 3 samples at 1m0s", fb)
		}
		if err := r.ForgetFallbackCursors(ctx, []string{uid}); err != nil {
			t.Fatal(err)
		}
		if cur, _ := r.FallbackCursors(ctx, []string{uid}); !cur[uid].IsZero() {
			t.Errorf("cursor of %s survived forgetting: %v", uid, cur[uid])
		}
	})
}
