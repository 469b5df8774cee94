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

// TestNodeTallies: two writers with different node names write the same series (a closed
// window and the open one) and a third writes without a name, as agents before
// attribution did. The reader returns each named node's samples and sum, counting a
// closed window once however often it is read (before and after its fold) and the open
// window as it is at each read; the unnamed writer's samples count in the histogram only.
func TestNodeTallies(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, url string) {
		l := series.DefaultLayout(168 * time.Hour)
		p := newProfile()
		id := series.SeriesID{Profile: p, Container: "app", Resource: series.ResourceCPU, Signal: series.SignalUsage}
		now := time.Now()
		open0 := series.WindowStart(now, l.Window)
		closed := open0.Add(-2 * l.Window)
		want := map[string]series.NodeTally{}
		var total int64
		r := rand.New(rand.NewPCG(7, 7))
		write := func(node string, start time.Time, n int) {
			t.Helper()
			h := window(t, r, start, n, millicores)
			if start.Equal(open0) { // samples before now only
				h = &series.Histogram{}
				for i := 0; i < n; i++ {
					if err := h.Add(millicores(r), start); err != nil {
						t.Fatal(err)
					}
				}
			}
			w := mustWriter(t, open(t, url), l)
			if err := w.Flush(ctx, []series.WindowUpdate{{Series: id, Start: start, Hist: h, Node: node}}); err != nil {
				t.Fatal(err)
			}
			total += h.N
			if node != "" {
				x := want[node]
				x.Node, x.N, x.Sum = node, x.N+h.N, x.Sum+h.Total
				want[node] = x
			}
		}
		write("node-a", closed, 20)
		write("node-b", closed, 30)
		write("node-a", open0, 5)
		write("node-b", open0, 7)
		write("", open0, 11)
		rd := mustReader(t, c, l)
		check := func(when string) {
			t.Helper()
			hs, err := rd.Read(ctx, p, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := hs[id].N; got != total {
				t.Errorf("%s: histogram holds %d samples, want %d", when, got, total)
			}
			got := rd.Nodes(p)[id]
			if diff := cmp.Diff([]series.NodeTally{want["node-a"], want["node-b"]}, got); diff != "" {
				t.Errorf("%s: node tallies (-want +got):\n%s", when, diff)
			}
		}
		check("first read")
		check("warm read")
		write("node-b", open0, 4)
		check("after node-b wrote more into the open window")
		check("another warm read")
		// A fresh reader (a restarted control plane) sees the open window's tallies; the
		// closed window was folded into its rollup, which carries none.
		rd = mustReader(t, c, l)
		hs, err := rd.Read(ctx, p, now)
		if err != nil || hs[id].N != total {
			t.Fatalf("fresh reader: %v, %d samples, want %d", err, hs[id].N, total)
		}
		for _, x := range rd.Nodes(p)[id] {
			if x.Node == "node-b" && x.N != 11 {
				t.Errorf("fresh reader: node-b has %d samples, want the open window's 11", x.N)
			}
		}
	})
}
