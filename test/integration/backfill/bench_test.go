// Package backfill measures the day-0 backfill at scale (1 day × 1,000 pods of one
// profile) into a real Valkey: once from generated query_range answers (the Ballast side
// alone: HTTP, parse, fold into windows, one pipelined write), once from a real Prometheus
// whose TSDB holds the day (promtool's backfill of generated OpenMetrics).
package backfill

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/backfill"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

var srv *harness.Servers

func TestMain(m *testing.M) {
	harness.Logger()
	harness.Main(m, harness.Need{Valkey: true}, &srv)
}

var selector = map[string]string{"app.kubernetes.io/name": "bench", "app.kubernetes.io/component": "api"}

func benchPods() int {
	if n, err := strconv.Atoi(os.Getenv("BALLAST_BENCH_BACKFILL_PODS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// answer is a query_range answer: pods series of one point a step over [start, end].
func answer(pods int, start, end time.Time, step time.Duration, value func(i int, t time.Time) float64) []byte {
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := range pods {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"namespace":"ns-%d","pod":"bench-%d","container":"app"},"values":[`, i%40, i)
		for t := start; !t.After(end); t = t.Add(step) {
			if !t.Equal(start) {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%d,"%g"]`, t.Unix(), value(i, t))
		}
		b.WriteString("]}")
	}
	b.WriteString("]}}")
	return b.Bytes()
}

func run(b *testing.B, src backfill.Source, start, end time.Time) {
	reader := store.NewProfileReaderConfig(store.Config{URL: srv.Valkey.URL()})
	bf := backfill.New(src, reader, backfill.Options{})
	var samples int64
	var peak peakMemory
	b.ResetTimer()
	for i := range b.N {
		stop := peak.watch()
		res := bf.Run(context.Background(), backfill.Request{Profile: "bench", Hash: fmt.Sprintf("%016x", time.Now().UnixNano()+int64(i)),
			SelectorLabels: selector, Start: start, End: end, Retention: ballastv1.DefaultRetentionWindow})
		stop()
		if res.Reason != backfill.ResultBackfilled {
			b.Fatalf("backfill: %+v", res)
		}
		samples = res.Samples
	}
	b.StopTimer()
	b.ReportMetric(float64(samples), "samples/op")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/backfill")
	b.ReportMetric(float64(peak.heap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peak.alloc)/float64(b.N)/(1<<20), "alloc-MiB/op")
	if peak.rss > 0 {
		b.ReportMetric(float64(peak.rss)/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(peak.baseRSS)/(1<<20), "base-rss-MiB")
	}
}

// peakMemory is the memory one backfill takes: the Go heap in use above what it was before
// the backfill (sampled every 5 ms, garbage not yet collected included; the largest over
// the runs), the bytes allocated, and the process' peak resident set (VmHWM after
// resetting it) with the resident set before the run (the benchmark's own baseline, such
// as the generated answers the test server holds).
type peakMemory struct {
	heap, alloc, rss, baseRSS uint64
}

func (p *peakMemory) watch() (stop func()) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, allocated := ms.HeapInuse, ms.TotalAlloc
	// Linux: writing 5 to clear_refs resets VmHWM to the current resident set.
	rssReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	if rssReset {
		p.baseRSS = max(p.baseRSS, procStatus("VmRSS:"))
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base && m.HeapInuse-base > p.heap {
				p.heap = m.HeapInuse - base
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		p.alloc += m.TotalAlloc - allocated
		if rssReset {
			p.rss = max(p.rss, procStatus("VmHWM:"))
		}
	}
}

// procStatus is a /proc/self/status size field (VmRSS:, VmHWM:) in bytes, 0 when unknown.
func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// BenchmarkBackfillWrite: 1 day × 1,000 pods from generated answers (what a Prometheus
// would send at the one-minute step) into the real Valkey. Goal: well under the 30 s
// default --history-prometheus-timeout.
func BenchmarkBackfillWrite(b *testing.B) {
	pods := benchPods()
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-24 * time.Hour)
	cpu := answer(pods, start, end, time.Minute, func(i int, t time.Time) float64 { return 0.2 + float64(i%7)/100 })
	mem := answer(pods, start, end, time.Minute, func(i int, t time.Time) float64 { return float64(180<<20 + (i%13)<<20) })
	b.Logf("answers: cpu %d MiB, memory %d MiB", len(cpu)>>20, len(mem)>>20)
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		body := mem
		if strings.Contains(r.Form.Get("query"), "container_cpu_usage_seconds_total") {
			body = cpu
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer h.Close()
	src, err := backfill.NewPrometheus(h.URL, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	run(b, src, start, end)
}

// BenchmarkBackfillPrometheus: 1 day × 1,000 pods held by a real Prometheus (scraped
// every minute, written with promtool's TSDB backfill before the server starts), read
// with the production queries (kube_pod_labels join) and written into the real Valkey.
func BenchmarkBackfillPrometheus(b *testing.B) {
	pods := benchPods()
	end := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	start := end.Add(-24 * time.Hour)
	usage := make([]harness.PodUsage, pods)
	for i := range usage {
		f := func(t time.Time) (float64, float64) { return 0.2 + float64(i%7)/100, float64(180<<20 + (i%13)<<20) }
		usage[i] = harness.PodUsage{Namespace: fmt.Sprintf("ns-%d", i%40), Pod: fmt.Sprintf("bench-%d", i), Labels: selector,
			Containers: map[string]func(time.Time) (float64, float64){"app": f}}
	}
	f, err := os.CreateTemp("", "ballast-bench-*.om")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	began := time.Now()
	if err := harness.WriteCAdvisorHistory(f, usage, start, end, time.Minute); err != nil {
		b.Fatal(err)
	}
	_ = f.Close()
	om, err := os.ReadFile(f.Name())
	if err != nil {
		b.Fatal(err)
	}
	prom, err := harness.StartPrometheus(om)
	if err != nil {
		b.Fatal(err)
	}
	defer prom.Stop()
	b.Logf("prometheus holding %d pods × 1 day (%d MiB OpenMetrics) ready in %v", pods, len(om)>>20, time.Since(began).Round(time.Second))
	om = nil
	src, err := backfill.NewPrometheus(prom.URL, 5*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	run(b, src, start, end.Add(time.Minute))
}
