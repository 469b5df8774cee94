package store_test

import (
	"context"
	"fmt"
	"github.com/ballastk8s/ballast/pkg/store"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

// servers lists the two deployments every store test runs against.
var servers = map[string]func() string{
	"standalone":       func() string { return srv.Valkey.URL() },
	"3-master cluster": func() string { return srv.Cluster.URL() },
}

// eachServer runs f against a fresh client of each deployment; url opens more clients.
func eachServer(t *testing.T, f func(t *testing.T, ctx context.Context, c *store.Client, url string)) {
	for name, url := range servers {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := open(t, url())
			f(t, ctx, c, url())
		})
	}
}

func open(t testing.TB, url string) *store.Client {
	t.Helper()
	c, err := store.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newProfile returns a fresh random profile hash, so tests never share keys.
func newProfile() string { return fmt.Sprintf("%016x", rand.Uint64()) }

// scanKeys lists the keys matching pattern on every node.
func scanKeys(t testing.TB, ctx context.Context, c *store.Client, pattern string) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, n := range c.Raw().Nodes() {
		var cursor uint64
		for {
			e, err := n.Do(ctx, n.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scanning %s: %v", pattern, err)
			}
			for _, k := range e.Elements {
				seen[k] = true
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// pttl returns the remaining time to live of key (-1: no expiry, -2: missing).
func pttl(t testing.TB, ctx context.Context, c *store.Client, key string) time.Duration {
	t.Helper()
	ms, err := c.Raw().Do(ctx, c.Raw().B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	if ms < 0 {
		return time.Duration(ms)
	}
	return time.Duration(ms) * time.Millisecond
}

// window builds the histogram of whole-number samples spread over the window starting at
// start.
func window(t testing.TB, r *rand.Rand, start time.Time, n int, gen func(*rand.Rand) float64) *series.Histogram {
	t.Helper()
	h := &series.Histogram{}
	for i := 0; i < n; i++ {
		if err := h.Add(gen(r), start.Add(time.Duration(r.IntN(300))*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func millicores(r *rand.Rand) float64 { return float64(r.IntN(4000)) }
