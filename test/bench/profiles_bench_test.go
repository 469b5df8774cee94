package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/recommend/feed"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/simagent"
)

const (
	cycleProfiles   = 10000
	cycleContainers = simagent.Containers
	cycleWorkers    = 8
)

var cycleResources = simagent.Resources

// BenchmarkProfileCycle measures one computation cycle over 10,000 profiles × 2 containers ×
// 3 resources (60,000 series): store read (merge of retained windows) plus statistics,
// readiness and recommendations, as the profiles controller runs them. Cycle 1 is cold (all
// history read and compacted); cycle 2 follows new samples on 10 % of the series, and shows
// that commands per cycle follow changed series, not samples.
func BenchmarkProfileCycle(b *testing.B) {
	ctx := context.Background()
	c, err := store.Open(srv.Valkey.URL())
	must(b, err)
	defer c.Close()
	retention := ballastv1.DefaultRetentionWindow
	layout := series.DefaultLayout(retention)
	w, err := store.NewWriter(c, layout)
	must(b, err)
	now := time.Now().UTC()
	hashes := make([]string, cycleProfiles)
	for i := range hashes {
		hashes[i] = fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15)
	}
	// History: two hours of windows at 10 s sampling per series.
	t0 := time.Now()
	writeHistory(b, w, hashes, now, 2*time.Hour, 1.0)
	b.Logf("wrote %d series × 2 h in %s", cycleProfiles*cycleContainers*len(cycleResources), time.Since(t0).Round(time.Millisecond))

	adapter := store.NewProfileReader(srv.Valkey.URL())
	defer adapter.Close()
	spec := ballastv1.DefaultPolicySpec(ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{
		{Resource: "cpu", Field: "request", Source: "s", Aggregation: "avg", Headroom: "1.25"},
		{Resource: "memory", Field: "request", Source: "s", Aggregation: "p75"},
		{Resource: "memory", Field: "limit", Source: "s", Aggregation: "p99", Headroom: "1.2"},
		{Resource: "ephemeral-storage", Field: "request", Source: "s", Aggregation: "p90"}}})
	compiled, err := policy.Compile(ballastv1.KindClusterResourcePolicy, "", "bench", 1, spec, policy.Floors{})
	if err != nil {
		b.Fatal(err)
	}

	cycle := func(now time.Time) (time.Duration, int64) {
		before := adapter.Commands()
		start := time.Now()
		work := make(chan string)
		var wg sync.WaitGroup
		for i := 0; i < cycleWorkers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for h := range work {
					s, err := adapter.Read(ctx, h, now, retention)
					if err != nil {
						b.Error(err)
						continue
					}
					in := feed.Of(s.Series, s.OOMs, s.Nodes)
					recommend.Compute(recommend.Input{Now: now, Policy: compiled, Retention: retention,
						SamplingInterval: 10 * time.Second, Containers: in.Containers, PodSeries: in.Pod, OOMs: in.OOMs})
				}
			}()
		}
		for _, h := range hashes {
			work <- h
		}
		close(work)
		wg.Wait()
		return time.Since(start), adapter.Commands() - before
	}
	b.ResetTimer()
	d1, c1 := cycle(now)
	// 10 % of the series get one new window of samples.
	later := now.Add(2 * layout.Window)
	writeHistory(b, w, hashes, later, layout.Window, 0.1)
	d2, c2 := cycle(later.Add(time.Second))
	d3, c3 := cycle(later.Add(2 * time.Second)) // nothing new
	b.StopTimer()
	rss := rssMiB()
	b.ReportMetric(d1.Seconds(), "cold-cycle-s")
	b.ReportMetric(d2.Seconds(), "cycle-s")
	b.ReportMetric(float64(c1), "cold-cmds")
	b.ReportMetric(float64(c2), "cmds-10%-changed")
	b.ReportMetric(float64(c3), "cmds-unchanged")
	b.ReportMetric(rss, "rss-MiB")
	fmt.Printf("\n%-44s %10s %12s\n", fmt.Sprintf("profile cycle: %d profiles × %d × %d series, %d workers", cycleProfiles, cycleContainers, len(cycleResources), cycleWorkers), "wall s", "commands")
	fmt.Printf("%-44s %10.2f %12d\n%-44s %10.2f %12d\n%-44s %10.2f %12d\n%-44s %10.0f MiB (peak RSS of the whole process)\n",
		"cycle 1 (cold: read + compact 24 windows)", d1.Seconds(), c1,
		"cycle 2 (10% of series got a new window)", d2.Seconds(), c2,
		"cycle 3 (nothing new)", d3.Seconds(), c3, "peak RSS", rss)
}

// writeHistory writes windows ending at end for a fraction of the series.
func writeHistory(b *testing.B, w *store.Writer, hashes []string, end time.Time, backlog time.Duration, fraction float64) {
	must(b, simagent.History(context.Background(), w, hashes, end, backlog, fraction))
}

// rssMiB is the process's peak resident set (VmHWM).
func rssMiB() float64 {
	runtime.GC()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}
