package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
	"github.com/ballastk8s/ballast/test/simagent"
)

// LiveOptions size the live run (-mode ballast-live): the real ballast-control binary at
// scale, its agents simulated in this process.
type LiveOptions struct {
	Nodes, Pods, Replicas int
	// Rate is the pod creates per second of the churn phase (enrolled and baseline pods).
	Rate int
	// BaselineEvery makes every n-th create a baseline pod: not enrolled, so the webhook's
	// object selector skips it.
	BaselineEvery int
	// Sampling is the MetricsSources' pollInterval: each profile is recomputed once per
	// interval. Flush is the simulated agents' flush interval.
	Sampling, Flush time.Duration
	// History is the backlog written per series before the cold pass, as windows.
	History time.Duration
	// HistoryDays, when > 0, adds that many whole days before today as daily rollups (as
	// the control plane's compaction leaves them) and sets BallastConfig's retention to a
	// week (or the days and today, if longer), so the reader holds what a cluster that ran
	// for that long gives it.
	HistoryDays int
	// Steady is how long the steady phase is watched.
	Steady time.Duration
	// ControlArgs are extra ballast-control flags.
	ControlArgs []string
	// MemoryLimit, when > 0, is ballast-control's limits.memory: its Go soft limit
	// (BALLAST_CONTAINER_MEMORY_LIMIT) and, where this machine allows, the hard limit of a
	// memory cgroup it runs in, as the kubelet would run it.
	MemoryLimit int64
}

// LiveScale is the live run's result (scale-ballast-live.json).
type LiveScale struct {
	Nodes, Pods, BaselinePods, Profiles, Series int
	Retention                                   string
	HistoryDays                                 int `json:",omitempty"`
	SamplingInterval, FlushInterval             string
	ControlArgs                                 []string
	LoadAverage                                 []string // /proc/loadavg at the start, after the churn, at the end

	// Churn: pods created through the API server, the webhook in the path of enrolled ones.
	ChurnS, ChurnRate                                 float64 // wall time; achieved creates/s
	CreateP50, CreateP99, CreateMax                   float64 // ms, enrolled pods
	BaselineP50, BaselineP99, BaselineMax             float64 // ms, pods the webhook skips
	CreateErrors                                      int
	WebhookServerP50, WebhookServerP99, WebhookMeanMs float64 // ms, controller-runtime's webhook histogram over the churn (bucket bounds)
	EnrolledS                                         float64 // churn start → every profile exists with its measurementHash

	// Passes: every profile enqueued at once, until the queue drained.
	HistoryWriteS          float64
	RollupDaysWriteS       float64 `json:",omitempty"`
	ColdPassS, SteadyPassS float64

	// Steady phase (the agents flushing, requeues at the sampling interval).
	SteadyS                          float64
	ReconcilesPerS, NeededPerS       float64 // profiles controller; profiles ÷ sampling interval
	ReconcileMeanMs, QueueWaitMeanMs float64
	ReconcileErrors                  float64
	Workers                          float64
	QueueDepthMax                    float64
	StalestS, MedianAgeS             float64 // age of the profiles' newest usageStats.lastUpdated at the end
	Unrecomputed                     int     // profiles without usage statistics at the end
	MedianSamples                    int64   // retained samples of a profile's first cpu series at the end: median
	ControlCPUCores                  float64 // ballast-control CPU-seconds ÷ steady wall seconds
	ControlRSSMiB, ControlPeakMiB    float64 // at the end; VmHWM (the peak since start, churn included)
	// EnrolledRSSMiB, EnrolledPeakMiB and EnrolledHeapMiB are ballast-control's RSS, VmHWM and
	// Go heap in use (go_memstats_heap_inuse_bytes) once every profile has its hash.
	EnrolledRSSMiB, EnrolledPeakMiB, EnrolledHeapMiB float64
	// ColdPeakMiB is ballast-control's VmHWM after the cold pass.
	ColdPeakMiB float64
	// PassQueueLeft is the profiles queue's depth a pass ended with when it never emptied
	// (the pass then counts until the reconciles reached the profile count).
	PassQueueLeft []float64 `json:",omitempty"`
	// Memory sampled every second over the whole run (Memory).
	Memory                      liveMemory
	ValkeyOpsPerS               float64
	ValkeyUsedMiB, ValkeyRSSMiB float64
	WritesPerMin                map[string]float64 // API-server writes by resource over the steady phase
	FlushErrors, FlushesPerNode int64
}

// liveMain runs the live scale bench and writes scale-ballast-live.json into dir.
func liveMain(ctx context.Context, dir string, o LiveOptions) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	bin := filepath.Join(dir, "bin")
	fmt.Printf("%s  building ballast-control into %s\n", now(), bin)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", "./cmd/ballast-control")
	build.Dir, build.Stdout, build.Stderr = harness.RepoRoot(), os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return err
	}
	r, err := runLive(ctx, dir, filepath.Join(bin, "ballast-control"), o)
	if r != nil {
		out, _ := json.MarshalIndent(r, "", "  ")
		fmt.Printf("\nscale (live ballast-control): %s\n", out)
		if werr := os.WriteFile(filepath.Join(dir, "scale-ballast-live.json"), out, 0o644); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

func runLive(ctx context.Context, dir, controlBin string, o LiveOptions) (*LiveScale, error) {
	workloads := o.Pods / o.Replicas
	r := &LiveScale{Nodes: o.Nodes, Pods: o.Pods, Profiles: workloads, Series: workloads * simagent.Containers * len(simagent.Resources),
		SamplingInterval: o.Sampling.String(), FlushInterval: o.Flush.String(), ControlArgs: o.ControlArgs, WritesPerMin: map[string]float64{},
		HistoryDays: o.HistoryDays}
	retention := 24 * time.Hour // the sandbox's default
	if o.HistoryDays > 0 {
		retention = max(series.DefaultRetention, time.Duration(o.HistoryDays+1)*24*time.Hour)
	}
	r.Retention = retention.String()
	r.LoadAverage = append(r.LoadAverage, loadavg())
	var cgLimit int64
	if o.MemoryLimit > 0 && sandbox.MemCgroupAvailable() {
		cgLimit = o.MemoryLimit
	}
	s, err := sandbox.Start(ctx, sandbox.Options{Dir: filepath.Join(dir, "sandbox"), Nodes: o.Nodes, System: sandbox.SystemBallast,
		ControlBin: controlBin, ControlMemoryLimit: cgLimit, Light: true, StaticNodes: true, SampleInterval: o.Sampling, Readiness: sandbox.DemoReadiness, Retention: retention,
		Progress: os.Stdout, ControlArgs: append([]string{"--log-level", "info"}, o.ControlArgs...),
		// The bench creates the pods of each ReplicaSet itself (bound to their nodes), so the
		// controllers that would create, adopt or collect them are off.
		DisabledControllers: []string{"replicaset-controller", "deployment-controller", "garbage-collector-controller"}})
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	mctx, stopMemory := context.WithCancel(ctx)
	memDone := make(chan struct{})
	go func() { r.Memory.sample(mctx, s); close(memDone) }()
	defer func() { stopMemory(); <-memDone }()
	ctl, err := newLiveCluster(ctx, s, o)
	if err != nil {
		return r, err
	}
	if err := ctl.createOwners(ctx); err != nil {
		return r, err
	}
	m0, _ := ctl.scrape()
	t0 := time.Now()
	enrolled, baseline, errs := ctl.churn(ctx)
	r.ChurnS = time.Since(t0).Seconds()
	r.ChurnRate = float64(len(enrolled)+len(baseline)) / r.ChurnS
	r.BaselinePods, r.CreateErrors = len(baseline), errs
	r.CreateP50, r.CreateP99, r.CreateMax = quantiles(enrolled)
	r.BaselineP50, r.BaselineP99, r.BaselineMax = quantiles(baseline)
	m1, _ := ctl.scrape()
	hook := map[string]string{"webhook": ballastv1.WebhookPath}
	if d := bucketDelta(m1, m0, "controller_runtime_webhook_latency_seconds", hook); len(d) > 0 {
		r.WebhookServerP50, r.WebhookServerP99 = 1000*bucketQuantile(d, 0.5), 1000*bucketQuantile(d, 0.99)
	}
	r.WebhookMeanMs = 1000 * meanDelta(m1, m0, "controller_runtime_webhook_latency_seconds", hook)
	r.LoadAverage = append(r.LoadAverage, loadavg())
	fmt.Printf("%s  churn: %d enrolled + %d baseline creates in %.0f s (%.0f/s); enrolled p50/p99 %.2f/%.2f ms, baseline %.2f/%.2f ms\n",
		now(), len(enrolled), len(baseline), r.ChurnS, r.ChurnRate, r.CreateP50, r.CreateP99, r.BaselineP50, r.BaselineP99)

	nodeHashes, err := ctl.waitEnrolled(ctx, workloads)
	if err != nil {
		return r, err
	}
	r.EnrolledS = time.Since(t0).Seconds()
	fmt.Printf("%s  every profile has its measurementHash %.0f s after the churn began\n", now(), r.EnrolledS)
	ps := s.ProcStats()["ballast-control"]
	me, _ := ctl.scrape()
	r.EnrolledRSSMiB, r.EnrolledPeakMiB = ps.RSSMiB, ps.PeakMiB
	r.EnrolledHeapMiB = sumOr0(me, "go_memstats_heap_inuse_bytes", nil) / (1 << 20)
	fmt.Printf("%s  ballast-control: RSS %.0f MiB, peak %.0f MiB, Go heap in use %.0f MiB\n", now(), ps.RSSMiB, ps.PeakMiB, r.EnrolledHeapMiB)

	vc, err := store.Open(s.Valkey.URL())
	if err != nil {
		return r, err
	}
	defer vc.Close()
	layout := series.DefaultLayout(retention)
	w, err := store.NewWriter(vc, layout)
	if err != nil {
		return r, err
	}
	if o.HistoryDays > 0 {
		td := time.Now()
		if err := simagent.RollupDays(ctx, vc, layout, ctl.hashes(), layout.RollupStart(time.Now().UTC()), o.HistoryDays); err != nil {
			return r, err
		}
		r.RollupDaysWriteS = time.Since(td).Seconds()
		fmt.Printf("%s  %d days of daily rollups per series written in %.0f s (retention %s)\n", now(), o.HistoryDays, r.RollupDaysWriteS, retention)
	}
	// The backlog is written before the agents start: on two cores, writing it while 1,000
	// agents flush took longer than the run could wait.
	th := time.Now()
	if err := simagent.History(ctx, w, ctl.hashes(), time.Now().UTC(), o.History, 1); err != nil {
		return r, err
	}
	r.HistoryWriteS = time.Since(th).Seconds()
	actx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	var counters simagent.Counters
	done := make(chan struct{}, len(nodeHashes))
	i := 0
	for node, hashes := range nodeHashes {
		a := simagent.Agent{Node: node, Seed: uint64(i), Hashes: hashes, Every: o.Flush, Heartbeat: true}
		i++
		go func() { a.Run(actx, w, &counters); done <- struct{}{} }()
	}
	fmt.Printf("%s  %s of history per series written in %.0f s; agents of %d nodes flushing every %s\n",
		now(), o.History, r.HistoryWriteS, len(nodeHashes), o.Flush)
	if r.ColdPassS, err = ctl.pass(ctx, workloads); err != nil {
		return r, err
	}
	fmt.Printf("%s  cold pass (every profile enqueued, backlog read): %.1f s\n", now(), r.ColdPassS)
	ps = s.ProcStats()["ballast-control"]
	r.ColdPeakMiB = ps.PeakMiB

	if err := ctl.steady(ctx, r, o); err != nil {
		return r, err
	}
	if r.SteadyPassS, err = ctl.pass(ctx, workloads); err != nil {
		return r, err
	}
	fmt.Printf("%s  steady pass (every profile enqueued, agents flushing): %.1f s\n", now(), r.SteadyPassS)
	r.PassQueueLeft = ctl.notEmptied
	stopAgents()
	for range nodeHashes {
		<-done
	}
	r.FlushErrors = counters.Errors.Load()
	if len(nodeHashes) > 0 {
		r.FlushesPerNode = counters.Flushes.Load() / int64(len(nodeHashes))
	}
	r.LoadAverage = append(r.LoadAverage, loadavg())
	return r, nil
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return time.Now().UTC().Format("15:04") + " " + strings.Join(f[:3], " ")
}
