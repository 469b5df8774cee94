package store_test

import (
	"context"
	"fmt"
	"github.com/ballastk8s/ballast/pkg/store"
	"strconv"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/test/harness"
)

var srv *harness.Servers

func TestMain(m *testing.M) {
	harness.Main(m, harness.Need{Valkey: true, Cluster: true}, &srv)
}

// TestPipelinedRoundTrip writes many hash increments in one pipelined batch, spread over
// keys whose hash tags land on different cluster slots, and reads them back.
func TestPipelinedRoundTrip(t *testing.T) {
	cases := map[string]func() string{
		"standalone":       func() string { return srv.Valkey.URL() },
		"3-master cluster": func() string { return srv.Cluster.URL() },
	}
	for name, url := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := store.Open(url())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			const keys, fields = 64, 5
			prefix := fmt.Sprintf("rt-%d", time.Now().UnixNano())
			cmds := make(valkey.Commands, 0, keys*fields*2)
			for k := 0; k < keys; k++ {
				key := fmt.Sprintf("%s:{series-%d}:w", prefix, k)
				for f := 0; f < fields; f++ {
					cmds = append(cmds,
						c.Raw().B().Hincrby().Key(key).Field("b"+strconv.Itoa(f)).Increment(int64(k+f)).Build(),
						c.Raw().B().Hincrbyfloat().Key(key).Field("sum").Increment(0.5).Build())
				}
			}
			for i, r := range c.Raw().DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					t.Fatalf("command %d: %v", i, err)
				}
			}
			slots := map[int64]bool{}
			for k := 0; k < keys; k++ {
				key := fmt.Sprintf("%s:{series-%d}:w", prefix, k)
				got, err := c.Raw().Do(ctx, c.Raw().B().Hgetall().Key(key).Build()).AsStrMap()
				if err != nil {
					t.Fatal(err)
				}
				for f := 0; f < fields; f++ {
					if want := strconv.Itoa(k + f); got["b"+strconv.Itoa(f)] != want {
						t.Errorf("%s b%d = %q, want %q", key, f, got["b"+strconv.Itoa(f)], want)
					}
				}
				if got["sum"] != "2.5" {
					t.Errorf("%s sum = %q, want 2.5", key, got["sum"])
				}
				slot, err := c.Raw().Do(ctx, c.Raw().B().ClusterKeyslot().Key(key).Build()).AsInt64()
				if err == nil {
					slots[slot*3/16384] = true
				}
			}
			if name == "3-master cluster" && len(slots) != 3 {
				t.Errorf("keys landed on %d of 3 masters' slot ranges; the test would not exercise the cluster", len(slots))
			}
		})
	}
}
