package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

// A full node flushes into a small real Valkey (maxmemory 3mb, noeviction) until the
// server refuses writes: the refused flushes are counted as store_full and reported, the
// windows stay in the buffer (nothing dropped, nothing crashes), and once maxmemory is
// raised the next flush writes every buffered window, so each recorded sample reaches the
// store exactly once.
func TestFlushWhileStoreFull(t *testing.T) {
	v, err := harness.StartValkey("--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	a, pods := benchNode(t, 10*time.Second)
	a.o.RedisURL = v.URL()
	a.store = &storeConn{lazy: store.NewLazy(v.URL()), redact: a.o.StoreConfig().Redactor()}
	t.Cleanup(a.store.close)
	ctx := context.Background()
	start := series.WindowStart(time.Now().Add(time.Hour), series.DefaultWindow)
	a.st.mu.Lock()
	a.st.setPodsLocked(pods, start)
	a.st.mu.Unlock()
	a.since.Store(start.UnixNano()) // a sampling turn completed: heartbeats are written
	var recorded int64
	// One sample per series in a new window each turn: every turn adds a window per series.
	record := func(at time.Time) {
		a.st.mu.Lock()
		defer a.st.mu.Unlock()
		for _, p := range pods {
			for _, ctr := range p.Containers {
				cs := a.st.ctrs[containerKey(p.UID, ctr.Name)]
				a.recordLocked(p, cs, series.ResourceCPU, series.SignalUsage, 250, at, sourceCgroup, nil)
				a.recordLocked(p, cs, series.ResourceMemory, series.SignalUsage, 200<<20, at, sourceCgroup, nil)
				a.recordLocked(p, cs, series.ResourceMemory, series.SignalPeak, 220<<20, at, sourceCgroup, nil)
				recorded += 3
			}
		}
	}
	refused := func() float64 { return testutil.ToFloat64(a.m.flushes.WithLabelValues(flushStoreFull)) }

	var now time.Time
	turns := 0
	for ; turns < 200 && refused() == 0; turns++ {
		now = start.Add(time.Duration(turns) * series.DefaultWindow)
		record(now)
		a.flushOnce(ctx, now)
	}
	if refused() == 0 {
		t.Fatalf("the 3mb store never refused a flush in %d turns", turns)
	}
	used, _ := v.Do("INFO", "memory")
	t.Logf("store full after %d turns of %d series (%d samples recorded): %s", turns, len(pods)*benchContainers*3, recorded,
		infoField(used, "used_memory_human"))
	held := a.buf.Stats().Filed
	rep := a.report(debug.Filter{})
	if held == 0 || !rep.Store.Full || !strings.Contains(rep.Store.LastError, "OOM") || testutil.ToFloat64(a.m.storeUp) != 0 {
		t.Fatalf("refused flush: %d windows held, report %+v, store_up %v", held, rep.Store, testutil.ToFloat64(a.m.storeUp))
	}
	// Still full: the next flush is refused again and keeps everything.
	now = now.Add(series.DefaultWindow)
	record(now)
	before := refused()
	a.flushOnce(ctx, now)
	if refused() <= before || a.buf.Stats().Filed < held {
		t.Fatalf("second refused flush: store_full %v → %v, held %d → %d", before, refused(), held, a.buf.Stats().Filed)
	}
	if n := testutil.ToFloat64(a.m.flushes.WithLabelValues("heartbeat_error")); n != 0 {
		t.Errorf("%v heartbeats refused by the full store: every node would look gone", n)
	}
	for r, n := range a.buf.Stats().Dropped {
		if n != 0 {
			t.Errorf("%d windows dropped (%s) while the store was full", n, r)
		}
	}

	if _, err := v.Do("CONFIG", "SET", "maxmemory", "64mb"); err != nil {
		t.Fatal(err)
	}
	ok := testutil.ToFloat64(a.m.flushes.WithLabelValues("ok"))
	a.flushOnce(ctx, now.Add(time.Second))
	st := a.store.snapshot()
	if n := a.buf.Stats().Filed; n != 0 || st.full || testutil.ToFloat64(a.m.flushes.WithLabelValues("ok")) <= ok {
		t.Fatalf("after raising maxmemory: %d windows still buffered, full %t", n, st.full)
	}
	// Counted in the report (a batch the store filled up mid-way counts its applied part)
	// and in the metric alike.
	if m := int64(testutil.ToFloat64(a.m.samplesFlushed)); st.flushedSamples != recorded || m != recorded {
		t.Errorf("%d samples written (metric %d), %d recorded: every buffered sample must reach the store once", st.flushedSamples, m, recorded)
	}
}

func infoField(info, key string) string {
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			return key + "=" + v
		}
	}
	return key + "=?"
}
