package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/nodeagent/buffer"
	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
	"github.com/ballastk8s/ballast/pkg/nodeagent/kubelet"
	"github.com/ballastk8s/ballast/pkg/nodeagent/oom"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Agent is one ballast-node process.
type Agent struct {
	o     *Options
	log   logr.Logger
	now   func() time.Time
	disco *discovery.Watcher
	cg    *cgroup.Reader
	kube  summarySource // nil when the Summary source is disabled
	oomw  *oom.Watcher  // nil without inotify (cgroup v1, or inotify unavailable)
	units *source.Units // every source's metrics and health
	buf   *buffer.Buffer
	st    *state
	store *storeConn
	oomq  *oomQueue
	m     *metrics
	reg   *prometheus.Registry
	auth  *debug.Auth // nil with --debug-auth=false and no --debug-proxy-bind-address
	// bpf is the eBPF probe (--ebpf, and something loaded), stall its reclaim-stall source
	// (nil unless both reclaim programs loaded).
	bpf       *ebpf.Probe
	stall     *ebpf.StallSource
	bpfLoaded prometheus.Gauge
	// bpfLost reads the programs' ring-buffer drop count (set once the probe loaded).
	bpfLost atomic.Pointer[func() uint64]

	retention atomic.Int64 // time.Duration of BallastConfig's retentionWindow
	heartbeat atomic.Int64 // unix nanos of the sampling loop's last turn
	// since and sampled are the unix nanos of the sampling loop's first and latest
	// completed turn: the store heartbeat's Since and (once flushed) Through.
	since, sampled atomic.Int64
	through        time.Time // newest turn whose samples are all in the store (flusher only)
	// counters caches ballast_node_samples_total children; guarded by st.mu.
	counters map[[3]string]prometheus.Counter
}

// newAgent builds the parts that need no cluster or host access.
func newAgent(o *Options, reg *prometheus.Registry) *Agent {
	a := &Agent{
		o: o, log: ctrl.Log.WithName("ballast-node"), now: time.Now, reg: reg,
		buf:      buffer.New(series.DefaultLayout(ballastv1.DefaultRetentionWindow).Window, buffer.Limits{Filed: o.BufferMaxWindows, Pending: o.PendingMaxWindows}),
		st:       newState(),
		store:    &storeConn{lazy: store.NewLazyConfig(o.StoreConfig()), redact: o.StoreConfig().Redactor()},
		oomq:     &oomQueue{},
		m:        newMetrics(reg),
		units:    source.NewUnits(reg),
		counters: map[[3]string]prometheus.Counter{},
	}
	a.bpfLoaded = newEBPFGauge(reg)
	newEBPFLostCounter(reg, a.bpfLostCount)
	a.retention.Store(int64(ballastv1.DefaultRetentionWindow))
	a.heartbeat.Store(a.now().UnixNano())
	reg.MustRegister(newBufferCollector(a.buf, a.oomq.len))
	return a
}

// New builds the agent for cfg's API server; Run starts it.
func New(o *Options, cfg *rest.Config) (*Agent, error) {
	reg := prometheus.NewRegistry()
	a := newAgent(o, reg)
	var err error
	copts := cgroup.Options{Driver: map[string]cgroup.Driver{"auto": cgroup.DriverAuto, "systemd": cgroup.DriverSystemd,
		"cgroupfs": cgroup.DriverCgroupfs}[o.CgroupDriver],
		Version: map[string]cgroup.Version{"auto": cgroup.VersionAuto, "v1": cgroup.V1, "v2": cgroup.V2}[o.CgroupVersion]}
	if a.cg, err = cgroup.Open(o.CgroupRoot, copts); err != nil {
		return nil, err
	}
	if o.KubeletURL != "" {
		kc, err := kubelet.NewClient(kubelet.Config{URL: o.KubeletURL, TokenFile: o.KubeletTokenFile, CAFile: o.KubeletCAFile,
			InsecureSkipVerify: o.KubeletInsecureSkipVerify})
		if err != nil {
			return nil, err
		}
		a.kube = kc
	}
	var oomErr error
	if a.cg.Version() == cgroup.V2 {
		// OnError runs under the watcher's lock; Fail takes only the units' own.
		onErr := func(kind string, err error) { a.units.Fail(sourceOOM, a.now(), kind, err) }
		if a.oomw, oomErr = oom.NewWatcher(a.cg, oom.Options{OnError: onErr}); oomErr != nil {
			a.log.Error(oomErr, "inotify unavailable: oom kills are found by polling at each sampling interval")
		}
	}
	a.addSources(o.KubeletURL, oomErr)
	if o.EBPF {
		a.openEBPF()
	}
	if a.disco, err = discovery.NewWatcher(cfg, discovery.Options{NodeName: o.NodeName, MinInterval: o.MinSamplingInterval}); err != nil {
		return nil, err
	}
	if o.DebugAuth || o.debugProxy() {
		rv, err := debug.NewKubeReviewer(cfg)
		if err != nil {
			return nil, err
		}
		a.auth = debug.NewAuth(rv, o.debugAccept())
	}
	if !gathers(ctrlmetrics.Registry, "go_goroutines") {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return a, nil
}

// gathers reports whether g already exposes a metric family.
func gathers(g prometheus.Gatherer, name string) bool {
	mfs, _ := g.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return true
		}
	}
	return false
}

// Run serves the endpoints and runs every loop until ctx is done (then flushes once
// more) or one of them fails.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srvs, err := a.listen()
	if err != nil {
		return err
	}
	a.log.Info("starting", "node", a.o.NodeName, "cgroup", a.cg.Version().String(), "cgroupRoot", a.o.CgroupRoot,
		"kubelet", a.o.KubeletURL, "store", store.RedactURL(a.o.RedisURL), "debug", a.o.DebugBindAddress, "debugAuth", a.o.DebugAuth, "debugProxy", a.o.DebugProxyBindAddress,
		"debugServiceAccount", a.o.DebugServiceAccount)
	errc := make(chan error, 8)
	var wg sync.WaitGroup
	start := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	for _, s := range srvs {
		start(s.name+" server", s.serve)
	}
	start("discovery", a.disco.Run)
	start("sampler", a.runSampler)
	start("flusher", a.runFlusher)
	if a.kube != nil {
		start("kubelet summary", a.runSummary)
	}
	if a.oomw != nil {
		start("oom watcher", a.runOOM)
	}
	if a.bpf != nil {
		start("ebpf", a.runEBPF)
	}
	var first error
	select {
	case <-ctx.Done():
	case first = <-errc:
		a.log.Error(first, "stopping")
	}
	cancel()
	for _, s := range srvs {
		s.shutdown()
	}
	wg.Wait()
	if a.oomw != nil {
		_ = a.oomw.Close()
	}
	if a.bpf != nil {
		_ = a.bpf.Close()
	}
	a.store.close()
	_ = a.cg.Close()
	a.log.Info("stopped")
	return first
}

// sampleCounter returns the samples counter child for one label set; st.mu must be held.
func (a *Agent) sampleCounter(resource, signal, source string) prometheus.Counter {
	k := [3]string{resource, signal, source}
	c := a.counters[k]
	if c == nil {
		c = a.m.samples.WithLabelValues(resource, signal, source)
		a.counters[k] = c
	}
	return c
}

// healthy reports whether the sampling loop is turning.
func (a *Agent) healthy(now time.Time) error {
	last := time.Unix(0, a.heartbeat.Load())
	if d := now.Sub(last); d > 2*time.Minute {
		return fmt.Errorf("sampling loop stalled for %v", d.Round(time.Second))
	}
	return nil
}
