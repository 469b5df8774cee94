package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ballastk8s/ballast/pkg/nodeagent/buffer"
	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/kubelet"
)

// Sources, the source label of the agent's metrics and of the debug view.
const (
	sourceCgroup  = cgroup.SourceName
	sourceKubelet = kubelet.SourceName
	sourceOOM     = "oom"
)

// flushStoreFull is the result of a flush batch the store refused for lack of memory.
const flushStoreFull = "store_full"

// metrics are ballast-node's own instruments (SPEC §11.2: the ballast_node_ prefix); the
// per-source ones (cycle duration, source errors, source up) are source.Units'.
type metrics struct {
	samples        *prometheus.CounterVec
	rejected       *prometheus.CounterVec
	refsIgnored    prometheus.Counter
	seriesFlushed  prometheus.Counter
	samplesFlushed prometheus.Counter
	flushes        *prometheus.CounterVec
	flushDuration  prometheus.Histogram
	flushBytes     prometheus.Counter
	oomEvents      *prometheus.CounterVec
	pods           *prometheus.GaugeVec
	storeUp        prometheus.Gauge
	pressure       pressureCounters // pressure.go
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ballast_node_samples_total",
			Help: "Samples recorded into local windows, by resource, signal and source.",
		}, []string{"resource", "signal", "source"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ballast_node_samples_rejected_total",
			Help: "Samples not recorded, by resource, signal, source and reason (above_node_capacity, above_ceiling: implausible readings; invalid: no histogram takes the value).",
		}, []string{"resource", "signal", "source", "reason"}),
		refsIgnored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ballast_node_profile_refs_ignored_total",
			Help: "Pods whose profile-ref annotation names a profile their own labels and namespace do not resolve to (counted once per pod and ref; their samples are held, never filed under it).",
		}),
		seriesFlushed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ballast_node_series_flushed_total",
			Help: "Series windows written to Valkey (one per series and window per flush).",
		}),
		samplesFlushed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ballast_node_samples_flushed_total",
			Help: "Samples contained in the windows written to Valkey.",
		}),
		flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ballast_node_flushes_total",
			Help: "Flush batches by result: ok, error (Valkey failed; windows kept), store_full (Valkey at its maxmemory refused the writes; windows kept), unavailable (no connection), heartbeat_error.",
		}, []string{"result"}),
		flushDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ballast_node_flush_duration_seconds",
			Help:    "Duration of one pipelined flush batch.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		flushBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ballast_node_flush_payload_bytes_total",
			Help: "Keys and arguments sent in flush batches (payload estimate, without protocol framing).",
		}),
		oomEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ballast_node_oom_events_total",
			Help: "OOM kills handled, by limit hit (container, pod, node, unknown) and result (written, queued, dropped).",
		}, []string{"kind", "result"}),
		pods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ballast_node_pods",
			Help: "Enrolled pods of the node, by state (bound: filed under a profile hash; unbound: held pending).",
		}, []string{"state"}),
		storeUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ballast_node_store_up",
			Help: "1 when the last flush or OOM write reached Valkey, else 0.",
		}),
	}
	m.pressure = newPressureCounters(reg)
	reg.MustRegister(m.samples, m.rejected, m.refsIgnored, m.seriesFlushed, m.samplesFlushed, m.flushes,
		m.flushDuration, m.flushBytes, m.oomEvents, m.pods, m.storeUp)
	return m
}

// bufferCollector exports the buffer's counters at scrape time.
type bufferCollector struct {
	buf       *buffer.Buffer
	oomQueued func() int
	depth     *prometheus.Desc
	limit     *prometheus.Desc
	dropped   *prometheus.Desc
	droppedN  *prometheus.Desc
	oomQueue  *prometheus.Desc
}

func newBufferCollector(buf *buffer.Buffer, oomQueued func() int) *bufferCollector {
	return &bufferCollector{
		buf: buf, oomQueued: oomQueued,
		depth: prometheus.NewDesc("ballast_node_buffer_depth",
			"Windows held locally, by tier (filed: waiting for Valkey; pending: pods not bound to a profile yet).", []string{"tier"}, nil),
		limit: prometheus.NewDesc("ballast_node_buffer_limit", "Bound of each buffer tier, in windows.", []string{"tier"}, nil),
		dropped: prometheus.NewDesc("ballast_node_buffer_dropped_total",
			"Windows dropped from the local buffer (oldest first), by reason.", []string{"reason"}, nil),
		droppedN: prometheus.NewDesc("ballast_node_buffer_dropped_samples_total",
			"Samples in the windows dropped from the local buffer, by reason.", []string{"reason"}, nil),
		oomQueue: prometheus.NewDesc("ballast_node_oom_queue_depth",
			"OOM events waiting to be written (Valkey unreachable or pod not bound yet).", nil, nil),
	}
}

func (c *bufferCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.limit
	ch <- c.dropped
	ch <- c.droppedN
	ch <- c.oomQueue
}

func (c *bufferCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.buf.Stats()
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(s.Filed), "filed")
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(s.Pending), "pending")
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(s.Limits.Filed), "filed")
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(s.Limits.Pending), "pending")
	for _, r := range []string{buffer.DropFull, buffer.DropPendingFull, buffer.DropUnbound, buffer.DropExpired, buffer.DropRejected} {
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.Dropped[r]), r)
		ch <- prometheus.MustNewConstMetric(c.droppedN, prometheus.CounterValue, float64(s.DroppedSamples[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(c.oomQueue, prometheus.GaugeValue, float64(c.oomQueued()))
}
