package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	profilesctl "github.com/ballastk8s/ballast/pkg/control/profiles"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/recommend/feed"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/simagent"
)

// ScaleResult is Ballast's side of `make bench-scale`, written as JSON to
// $BALLAST_SCALE_OUT for test/vpabench to print beside VPA's.
type ScaleResult struct {
	Nodes, Pods, Profiles, Series   int
	ColdCycleS                      float64
	ColdValkeyCPUS                  float64 // Valkey's CPU time (user + sys) during the cold cycle
	AgentValkeyCPU                  float64 // share of a core Valkey spends on the agents' flushes alone
	SteadyValkeyCPU                 float64 // share of a core Valkey spends during the steady cycles (agents + cycles)
	SteadyCycleS, SteadyCycleMaxS   float64 // median and worst steady cycle while agents flush
	SteadyCycles                    int
	RestartCycleS                   float64 // first cycle of a fresh reader (control-plane restart) once the backlog is compacted
	RestartValkeyCPUS               float64
	AgentOpsPerS, TotalOpsPerS      float64 // Valkey commands/s: agents alone; agents + cycles
	BytesPerSeries                  float64 // MEMORY USAGE of every key of the profiles ÷ series, after 2 h of history
	RollupBytesPerSeries            float64 // of that: rollups
	WindowBytesPerSeries            float64 // of that: windows still open
	ProfileKeyBytesPerSeries        float64 // of that: per-profile keys (index, pending set, rollup set, epoch)
	UsedMemoryPerSeries             float64 // used_memory growth ÷ series (allocator and server overhead included)
	StatusChangesPerCycle           int     // mean number of profiles whose status changed materially in a steady cycle
	StatusWritesPerMin              float64 // status writes per minute the controller makes under the default --status-refresh-interval
	StatusWritesPerMinEveryChange   float64 // the same at --status-refresh-interval=0 (every material change)
	PeakRSSMiB                      float64 // the bench process: reader, compute and the simulated agents
	ValkeyRSSMiB                    float64 // used_memory_rss at the end
	FlushInterval                   string
	Workers                         int // profiles computed at once (the controller's --profile-workers)
	FlushErrors, FlushesPerNodeDone int64
}

// BenchmarkScale is the Ballast side of the scale comparison (issue 17): BALLAST_SCALE_PODS
// enrolled pods (default 20,000) of BALLAST_SCALE_REPLICAS replicas per workload (2: one
// profile per workload, no pooling across namespaces, the worst case) spread over
// BALLAST_SCALE_NODES nodes (1,000), each pod 2 containers × 3 resources. After a 2 h
// history backlog (as BenchmarkProfileCycle), one simulated agent per node flushes every
// 10 s (store.Writer, the wire format ballast-node uses; one sample per series per flush, 10 s
// sampling) while profile cycles (store.ProfileReader + recommend.Compute, 8 workers, the
// controller's code) run back to back for BALLAST_SCALE_STEADY (60 s).
func BenchmarkScale(b *testing.B) {
	nodes, pods := envInt("BALLAST_SCALE_NODES", 1000), envInt("BALLAST_SCALE_PODS", 20000)
	replicas := envInt("BALLAST_SCALE_REPLICAS", 2)
	steady := envDur("BALLAST_SCALE_STEADY", time.Minute)
	flushEvery := envDur("BALLAST_SCALE_FLUSH", 10*time.Second)
	profiles := pods / replicas
	ctx := context.Background()
	c, err := store.Open(srv.Valkey.URL())
	must(b, err)
	defer c.Close()
	retention := ballastv1.DefaultRetentionWindow
	layout := series.DefaultLayout(retention)
	w, err := store.NewWriter(c, layout)
	must(b, err)
	hashes := make([]string, profiles)
	for i := range hashes {
		hashes[i] = fmt.Sprintf("%016x", uint64(i+7)*0x9e3779b97f4a7c15)
	}
	res := ScaleResult{Nodes: nodes, Pods: pods, Profiles: profiles, Series: profiles * cycleContainers * len(cycleResources),
		FlushInterval: flushEvery.String(), Workers: envInt("BALLAST_SCALE_WORKERS", cycleWorkers)}
	mem0 := usedMemory(b, c)
	now := time.Now().UTC()
	writeHistory(b, w, hashes, now, 2*time.Hour, 1.0)

	adapter := store.NewProfileReader(srv.Valkey.URL())
	defer adapter.Close()
	compiled := benchPolicy(b)
	// What the profiles controller would write under the default refresh (its rule runs for
	// every profile, as in the controller) and at every material change (refresh 0, the
	// behaviour before --status-refresh-interval: a comparison figure, so it follows every
	// 10th profile and is scaled up, to keep the bench's own work out of the cycle).
	every, bounded := newStatusBook(profiles, 0, 10), newStatusBook(profiles, profilesctl.DefaultStatusRefresh, 1)
	cpu0 := valkeyCPU(b, c)
	stopCold := cpuProfile(b, os.Getenv("BALLAST_SCALE_COLD_CPUPROFILE"))
	d := scaleCycle(b, adapter, compiled, hashes, now, every, bounded)
	stopCold()
	res.ColdCycleS = d.Seconds()
	res.ColdValkeyCPUS = valkeyCPU(b, c) - cpu0
	// After the cold cycle compacted the closed windows into rollups, as in steady state.
	res.UsedMemoryPerSeries = float64(usedMemory(b, c)-mem0) / float64(res.Series)
	kb := keyBytes(b, c)
	per := func(n int64) float64 { return float64(n) / float64(res.Series) }
	res.RollupBytesPerSeries, res.WindowBytesPerSeries, res.ProfileKeyBytesPerSeries = per(kb.rollups), per(kb.windows), per(kb.profile)
	res.BytesPerSeries = per(kb.rollups + kb.windows + kb.profile)
	b.Logf("cold cycle over %d profiles: %s", profiles, d)

	actx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var counters simagent.Counters
	for n := 0; n < nodes; n++ {
		// Node n runs every nodes-th pod; a pod's profile is its workload's (pod ÷ replicas).
		a := simagent.Agent{Node: "node-" + strconv.Itoa(n), Seed: uint64(n), Every: flushEvery}
		for p := n; p < pods; p += nodes {
			a.Hashes = append(a.Hashes, hashes[p/replicas])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.Run(actx, w, &counters)
		}()
	}
	ops := func() int64 { return infoInt(b, c, "stats", "total_commands_processed") }
	time.Sleep(flushEvery) // every agent has started its cadence
	o0, t0, cpu0 := ops(), time.Now(), valkeyCPU(b, c)
	time.Sleep(2 * flushEvery)
	res.AgentOpsPerS = float64(ops()-o0) / time.Since(t0).Seconds()
	res.AgentValkeyCPU = (valkeyCPU(b, c) - cpu0) / time.Since(t0).Seconds()
	o0, t0, cpu0 = ops(), time.Now(), valkeyCPU(b, c)
	// The controller recomputes each profile once per sampling interval (10 s here): one
	// cycle per flush interval, or back to back when a cycle takes longer.
	var cycles []float64
	w0, b0 := every.writes.Load(), bounded.writes.Load()
	stopProfile := cpuProfile(b, os.Getenv("BALLAST_SCALE_CPUPROFILE"))
	for time.Since(t0) < steady || len(cycles) < 2 {
		next := time.Now().Add(flushEvery)
		d := scaleCycle(b, adapter, compiled, hashes, time.Now().UTC(), every, bounded)
		cycles = append(cycles, d.Seconds())
		time.Sleep(time.Until(next))
	}
	stopProfile()
	mins := time.Since(t0).Minutes()
	res.StatusChangesPerCycle = int(float64(every.writes.Load()-w0) / float64(len(cycles)))
	res.StatusWritesPerMin = float64(bounded.writes.Load()-b0) / mins
	res.StatusWritesPerMinEveryChange = float64(every.writes.Load()-w0) / mins
	res.TotalOpsPerS = float64(ops()-o0) / time.Since(t0).Seconds()
	res.SteadyValkeyCPU = (valkeyCPU(b, c) - cpu0) / time.Since(t0).Seconds()
	// A control-plane restart: a new reader with an empty cache, while the agents flush.
	restarted := store.NewProfileReader(srv.Valkey.URL())
	cpu0 = valkeyCPU(b, c)
	d = scaleCycle(b, restarted, compiled, hashes, time.Now().UTC())
	res.RestartCycleS, res.RestartValkeyCPUS = d.Seconds(), valkeyCPU(b, c)-cpu0
	restarted.Close()
	stop()
	wg.Wait()
	slices.Sort(cycles)
	res.SteadyCycles, res.SteadyCycleS, res.SteadyCycleMaxS = len(cycles), cycles[len(cycles)/2], cycles[len(cycles)-1]
	res.PeakRSSMiB = rssMiB()
	res.ValkeyRSSMiB = float64(infoInt(b, c, "memory", "used_memory_rss")) / (1 << 20)
	res.FlushErrors, res.FlushesPerNodeDone = counters.Errors.Load(), counters.Flushes.Load()/int64(nodes)
	b.ReportMetric(res.ColdCycleS, "cold-cycle-s")
	b.ReportMetric(res.SteadyCycleS, "cycle-s")
	b.ReportMetric(res.TotalOpsPerS, "valkey-ops/s")
	b.ReportMetric(res.BytesPerSeries, "B/series")
	b.ReportMetric(res.PeakRSSMiB, "rss-MiB")
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Printf("\nscale (Ballast side): %s\n", out)
	if p := os.Getenv("BALLAST_SCALE_OUT"); p != "" {
		must(b, os.WriteFile(p, out, 0o644))
	}
	if res.FlushErrors > 0 {
		b.Errorf("%d agent flushes failed", res.FlushErrors)
	}
}

// scaleCycle is one profile cycle over every hash; it returns its wall time. Each book
// records the statuses the controller would write.
func scaleCycle(b *testing.B, adapter *store.ProfileReader, compiled *policy.Compiled, hashes []string, now time.Time, books ...*statusBook) time.Duration {
	ctx := context.Background()
	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	for i := 0; i < envInt("BALLAST_SCALE_WORKERS", cycleWorkers); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				s, err := adapter.Read(ctx, hashes[i], now, ballastv1.DefaultRetentionWindow)
				if err != nil {
					b.Error(err)
					continue
				}
				in := feed.Of(s.Series, s.OOMs, s.Nodes)
				out := recommend.Compute(recommend.Input{Now: now, Policy: compiled, Retention: ballastv1.DefaultRetentionWindow,
					SamplingInterval: 10 * time.Second, Containers: in.Containers, PodSeries: in.Pod, OOMs: in.OOMs})
				for _, sb := range books {
					sb.observe(i, out, now)
				}
			}
		}()
	}
	for i := range hashes {
		work <- i
	}
	close(work)
	wg.Wait()
	return time.Since(start)
}

// statusBook follows, for every profile, the status the controller would have stored under
// one --status-refresh-interval, and counts the writes its rule (profiles.ShouldWriteStatus)
// makes.
type statusBook struct {
	refresh time.Duration
	stride  int // only every stride-th profile is followed; writes count stride each
	stored  []*ballastv1.WorkloadProfileStatus
	last    []time.Time
	writes  atomic.Int64
}

func newStatusBook(profiles int, refresh time.Duration, stride int) *statusBook {
	return &statusBook{refresh: refresh, stride: stride, stored: make([]*ballastv1.WorkloadProfileStatus, profiles), last: make([]time.Time, profiles)}
}

// observe records profile i's computation at now; only profile i's worker calls it.
func (sb *statusBook) observe(i int, out recommend.Result, now time.Time) {
	if i%sb.stride != 0 {
		return
	}
	old := sb.stored[i]
	if old == nil {
		old = &ballastv1.WorkloadProfileStatus{}
	}
	next := old.DeepCopy()
	out.ApplyTo(next)
	if write, _ := profilesctl.ShouldWriteStatus(old, next, sb.last[i], now, sb.refresh); write || sb.stored[i] == nil {
		sb.stored[i], sb.last[i] = next, now
		sb.writes.Add(int64(sb.stride))
	}
}

func benchPolicy(b *testing.B) *policy.Compiled {
	spec := ballastv1.DefaultPolicySpec(ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{
		{Resource: "cpu", Field: "request", Source: "s", Aggregation: "avg", Headroom: "1.25"},
		{Resource: "memory", Field: "request", Source: "s", Aggregation: "p75"},
		{Resource: "memory", Field: "limit", Source: "s", Aggregation: "p99", Headroom: "1.2"},
		{Resource: "ephemeral-storage", Field: "request", Source: "s", Aggregation: "p90"}}})
	compiled, err := policy.Compile(ballastv1.KindClusterResourcePolicy, "", "bench", 1, spec, policy.Floors{})
	must(b, err)
	return compiled
}

// cpuProfile writes a CPU profile to path, when set (BALLAST_SCALE_CPUPROFILE: the steady
// cycles, agents included; BALLAST_SCALE_COLD_CPUPROFILE: the cold cycle); the returned
// function ends it.
func cpuProfile(b *testing.B, path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	must(b, err)
	must(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		must(b, f.Close())
	}
}

func usedMemory(b *testing.B, c *store.Client) int64 { return infoInt(b, c, "memory", "used_memory") }

// valkeyCPU is Valkey's CPU time so far (INFO cpu: used_cpu_user + used_cpu_sys), seconds.
func valkeyCPU(b *testing.B, c *store.Client) float64 {
	return infoFloat(b, c, "cpu", "used_cpu_user") + infoFloat(b, c, "cpu", "used_cpu_sys")
}

type storeBytes struct{ rollups, windows, profile int64 }

// keyBytes sums MEMORY USAGE (every field counted: SAMPLES 0) over Ballast's keys, by kind.
func keyBytes(b *testing.B, c *store.Client) storeBytes {
	ctx := context.Background()
	raw := c.Raw()
	var out storeBytes
	cursor := uint64(0)
	for {
		e, err := raw.Do(ctx, raw.B().Scan().Cursor(cursor).Match(series.KeyPrefix+":{*").Count(2000).Build()).AsScanEntry()
		must(b, err)
		cmds := make([]valkey.Completed, len(e.Elements))
		for i, k := range e.Elements {
			cmds[i] = raw.B().MemoryUsage().Key(k).Samples(0).Build()
		}
		for i, r := range raw.DoMulti(ctx, cmds...) {
			n, err := r.AsInt64()
			if err != nil {
				continue // expired between SCAN and MEMORY USAGE
			}
			switch k := e.Elements[i]; {
			case strings.Contains(k, "}:p:"), strings.Contains(k, "}:r:"):
				out.rollups += n
			case strings.Contains(k, "}:w:"):
				out.windows += n
			default:
				out.profile += n
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return out
		}
	}
}

// infoInt reads one integer field of Valkey's INFO section.
func infoInt(b *testing.B, c *store.Client, section, field string) int64 {
	return int64(infoFloat(b, c, section, field))
}

// infoFloat reads one numeric field of Valkey's INFO section.
func infoFloat(b *testing.B, c *store.Client, section, field string) float64 {
	s, err := c.Raw().Do(context.Background(), c.Raw().B().Info().Section(section).Build()).ToString()
	must(b, err)
	for _, line := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	b.Fatalf("INFO %s has no %s", section, field)
	return 0
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDur(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
