package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestCapacity reads INFO memory from a standalone server and from every server of a
// cluster, and its probe write is accepted while there is room.
func TestCapacity(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		cp, err := c.Capacity(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if cp.UsedBytes <= 0 || cp.CountedBytes > cp.UsedBytes || cp.Addr == "" || cp.Refused || cp.Policy == "" {
			t.Errorf("capacity %+v", cp)
		}
	})
}

// A server at its maxmemory refuses writes; Capacity counts the refusals (INFO errorstats),
// a refused flush is told apart from other errors by IsStoreFull, and raising maxmemory
// makes flushes succeed again.
func TestCapacityOfAFullServer(t *testing.T) {
	v, err := harness.StartValkey("--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	c := open(t, v.URL())
	ctx := context.Background()
	for i := 0; ; i++ {
		if _, err := v.Do("SET", "filler:"+strconv.Itoa(i), strings.Repeat("x", 16<<10)); err != nil {
			if !strings.Contains(err.Error(), "OOM") {
				t.Fatal(err)
			}
			break
		}
		if i > 1000 {
			t.Fatal("the 2mb server never refused a write")
		}
	}
	cp, err := c.Capacity(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// The refused 16 KiB SET counted its own argument against maxmemory: the tiny probe
	// may still fit, the refusal count says writes are being refused.
	if cp.OOMErrors < 1 || cp.MaxBytes != 2<<20 || cp.Ratio() < 0.95 || cp.Policy != "noeviction" {
		t.Errorf("full server: %+v (ratio %.3f)", cp, cp.Ratio())
	}
	w, err := store.NewWriter(c, series.DefaultLayout(0))
	if err != nil {
		t.Fatal(err)
	}
	h := &series.Histogram{}
	now := time.Now()
	if err := h.Add(1<<20, now); err != nil {
		t.Fatal(err)
	}
	up := []series.WindowUpdate{{Series: series.SeriesID{Profile: newProfile(), Container: "app", Resource: series.ResourceMemory,
		Signal: series.SignalUsage}, Start: series.WindowStart(now, series.DefaultWindow), Hist: h}}
	if err := w.Flush(ctx, up); !store.IsStoreFull(err) {
		t.Fatalf("flush into a full server: %v", err)
	}
	if after, err := c.Capacity(ctx, time.Now()); err != nil || after.OOMErrors <= cp.OOMErrors {
		t.Errorf("the refused flush is not counted: %d → %d refusals (%v)", cp.OOMErrors, after.OOMErrors, err)
	}
	// Heartbeats still get through: a full store must not make every node look gone.
	hb := series.Heartbeat{Node: "node-1", Version: "test", Signals: []string{"cpu"}, Since: now.Add(-time.Minute), At: now, TTL: 30 * time.Second}
	if err := w.Heartbeat(ctx, hb); err != nil {
		t.Errorf("heartbeat into a full server: %v", err)
	}
	if got, err := v.Do("HEXISTS", series.HeartbeatsKey(), "node-1"); err != nil || got != "1" {
		t.Errorf("heartbeat not stored: %q %v", got, err)
	}
	if _, err := v.Do("CONFIG", "SET", "maxmemory", "0"); err != nil {
		t.Fatal(err)
	}
	if cp, err := c.Capacity(ctx, time.Now()); err != nil || cp.Refused || cp.MaxBytes != 0 {
		t.Errorf("after maxmemory 0: %+v %v", cp, err)
	}
	if err := w.Flush(ctx, up); err != nil {
		t.Errorf("flush after maxmemory 0: %v", err)
	}
}

// A store full of windows (a backlog the control plane has not folded yet) still lets the
// reader fold them: the compaction script runs with allow-oom and frees far more than it
// writes, so the refused agent writes fit again. Without it every read of a full store
// failed and only expiry (the retention window) made room.
func TestCompactionFreesAFullStore(t *testing.T) {
	v, err := harness.StartValkey("--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	c := open(t, v.URL())
	ctx := context.Background()
	layout := series.DefaultLayout(0)
	w, err := store.NewWriter(c, layout)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	first := series.WindowStart(now.Add(-25*time.Hour), layout.Window)
	var profiles []string
	var refused []series.WindowUpdate
	for len(refused) == 0 && len(profiles) < 500 {
		p := newProfile()
		profiles = append(profiles, p)
		var ups []series.WindowUpdate
		for i := range 96 { // a day of closed windows of one series
			start := first.Add(time.Duration(i) * layout.Window)
			h := &series.Histogram{}
			for j := range 3 {
				if err := h.Add(float64(100+i+j)*(1<<20), start.Add(time.Duration(j)*time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			ups = append(ups, series.WindowUpdate{Series: series.SeriesID{Profile: p, Container: "app",
				Resource: series.ResourceMemory, Signal: series.SignalUsage}, Start: start, Hist: h})
		}
		var fe *store.FlushError
		switch err := w.Flush(ctx, ups); {
		case err == nil:
		case errors.As(err, &fe) && store.IsStoreFull(err):
			for _, i := range fe.Failed {
				refused = append(refused, ups[i])
			}
		default:
			t.Fatal(err)
		}
	}
	if len(refused) == 0 {
		t.Fatal("the 3mb store never refused a flush")
	}
	full, err := c.Capacity(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.NewReader(c, layout)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range profiles {
		hs, err := r.Read(ctx, p, now)
		if err != nil {
			t.Fatalf("reading %s from a full store: %v", p, err)
		}
		if i < len(profiles)-1 && len(hs) != 1 { // the last one's windows may all be refused
			t.Fatalf("profile %s: %d series", p, len(hs))
		}
	}
	after, err := c.Capacity(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d profiles × 96 windows filled the store to %d B; folding them left %d B (%d windows compacted)",
		len(profiles), full.UsedBytes, after.UsedBytes, r.Stats().Compacted)
	if after.UsedBytes >= full.UsedBytes*3/4 || after.Refused {
		t.Errorf("compaction did not make room: %+v → %+v", full, after)
	}
	if err := w.Flush(ctx, refused); err != nil {
		t.Errorf("the refused windows after compaction: %v", err)
	}
}
