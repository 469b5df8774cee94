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
	"github.com/ballastk8s/ballast/pkg/nodeagent/kubelet"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Agent is one ballast-node process: the shared parts (discovery, the cgroup reader, the
// state, the buffer and the store) and its sources, one list behind one interface
// (sources.go).
type Agent struct {
	o     *Options
	log   logr.Logger
	now   func() time.Time
	disco *discovery.Watcher
	cg    *cgroup.Reader // the rooted reader every cgroup read goes through
	kroot kubeletRoot    // the kubelet cgroupRoot pods are looked for below, and its origin
	units *source.Units  // every source's metrics and health
	buf   *buffer.Buffer
	st    *state
	store *storeConn
	oomq  *oomQueue
	m     *metrics
	reg   *prometheus.Registry
	auth  *debug.Auth // nil with --debug-auth=false and no --debug-proxy-bind-address
	// sources are the signal sources in registration order (the debug view's order);
	// oomw and bpf link the two the others consult (nil without inotify, without a
	// loaded eBPF probe).
	sources []Source
	oomw    *oomSource
	bpf     *ebpfSource

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
	a.retention.Store(int64(ballastv1.DefaultRetentionWindow))
	a.heartbeat.Store(a.now().UnixNano())
	reg.MustRegister(newBufferCollector(a.buf, a.oomq.len))
	return a
}

// New builds the agent for cfg's API server with the given sources (cmd/ballast-node lists
// them); Run starts it.
func New(o *Options, cfg *rest.Config, sources ...SourceBuilder) (*Agent, error) {
	reg := prometheus.NewRegistry()
	a := newAgent(o, reg)
	var err error
	copts := cgroup.Options{Driver: map[string]cgroup.Driver{"auto": cgroup.DriverAuto, "systemd": cgroup.DriverSystemd,
		"cgroupfs": cgroup.DriverCgroupfs}[o.CgroupDriver],
		Version: map[string]cgroup.Version{"auto": cgroup.VersionAuto, "v1": cgroup.V1, "v2": cgroup.V2}[o.CgroupVersion]}
	var kc cgroupConfigReader
	if o.KubeletURL != "" && o.KubeletCgroupRoot == "" {
		c, err := kubelet.NewClient(kubelet.Config{URL: o.KubeletURL, TokenFile: o.KubeletTokenFile, CAFile: o.KubeletCAFile,
			InsecureSkipVerify: o.KubeletInsecureSkipVerify})
		if err != nil {
			return nil, err
		}
		kc = c
	}
	if a.kroot, err = resolveKubeletRoot(context.Background(), o.KubeletCgroupRoot, kc); err != nil {
		return nil, err
	}
	copts.Root = a.kroot.root
	if a.cg, err = cgroup.Open(o.CgroupRoot, copts); err != nil {
		return nil, err
	}
	a.checkKubeletRoot()
	if err := a.addSources(sources); err != nil {
		return nil, err
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

// Run serves the endpoints and runs discovery, the flusher and every source until ctx is
// done (then flushes once more) or one of them fails.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srvs, err := a.listen()
	if err != nil {
		return err
	}
	a.log.Info("starting", "node", a.o.NodeName, "cgroup", a.cg.Version().String(), "cgroupRoot", a.o.CgroupRoot, "kubeletCgroupRoot", a.kroot.String(),
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
	start("flusher", a.runFlusher)
	a.startSources(start)
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
	_ = a.closeSources()
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
