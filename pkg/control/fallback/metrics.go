package fallback

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the fallback's instruments.
type Metrics struct {
	// Coverage is ballast_agent_coverage{node}: 1 while a live node agent covers the node,
	// 0 while its enrolled pods are left to the fallback.
	Coverage *prometheus.GaugeVec
	// Samples is ballast_fallback_samples_total{resource}: samples written by the fallback.
	Samples *prometheus.CounterVec
	// Handover is ballast_fallback_points_total{owner}: readings decided (fallback, agent)
	// or dropped undecided (dropped).
	Handover *prometheus.CounterVec
	// Latency is ballast_fallback_latency_seconds: from a reading's sample time to its write.
	Latency prometheus.Histogram
	// API is ballast_fallback_metrics_api{state}: 1 for the current state of metrics.k8s.io.
	API *prometheus.GaugeVec

	uncoveredPods, badHeartbeats prometheus.Gauge

	mu    sync.Mutex
	nodes map[string]bool
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Coverage: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_agent_coverage",
			Help: "1 while a live node agent (heartbeat) covers the node, 0 while its enrolled pods are measured through metrics.k8s.io or not at all."}, []string{"node"}),
		Samples: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_fallback_samples_total",
			Help: "Samples written from metrics.k8s.io for pods on nodes without a live node agent."}, []string{"resource"}),
		Handover: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_fallback_points_total",
			Help: "metrics.k8s.io readings by who measured their sampling instant: fallback (written), agent (dropped), dropped (never decided)."}, []string{"owner"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ballast_fallback_latency_seconds",
			Help:    "Time from a metrics.k8s.io reading's sample time to its write into the store.",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300}}),
		API: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_fallback_metrics_api",
			Help: "1 for metrics.k8s.io's current state as the fallback sees it (Served, Unavailable, Disabled)."}, []string{"state"}),
		uncoveredPods: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ballast_fallback_uncovered_pods",
			Help: "Enrolled pods on nodes without a live node agent."}),
		badHeartbeats: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ballast_agent_heartbeats_invalid",
			Help: "Heartbeat records in the store that could not be decoded."}),
		nodes: map[string]bool{},
	}
	reg.MustRegister(m.Coverage, m.Samples, m.Handover, m.Latency, m.API, m.uncoveredPods, m.badHeartbeats)
	return m
}

func (m *Metrics) setCoverage(covered map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for n := range m.nodes {
		if _, ok := covered[n]; !ok {
			m.Coverage.DeleteLabelValues(n)
			delete(m.nodes, n)
		}
	}
	for n, ok := range covered {
		v := 0.0
		if ok {
			v = 1
		}
		m.Coverage.WithLabelValues(n).Set(v)
		m.nodes[n] = true
	}
}

func (m *Metrics) setAPI(state APIState) {
	for _, s := range []APIState{APIServed, APIUnavailable, APIDisabled} {
		v := 0.0
		if s == state {
			v = 1
		}
		m.API.WithLabelValues(string(s)).Set(v)
	}
}

func (m *Metrics) decided(d decision) {
	m.Handover.WithLabelValues("fallback").Add(float64(len(d.write)))
	m.Handover.WithLabelValues("agent").Add(float64(d.agent))
	m.Handover.WithLabelValues("dropped").Add(float64(d.dropped))
}

func (m *Metrics) written(p point, at time.Time) {
	n := float64(len(p.Containers))
	if p.Ephemeral {
		m.Samples.WithLabelValues("ephemeral-storage").Add(n)
	} else {
		m.Samples.WithLabelValues("cpu").Add(n)
		m.Samples.WithLabelValues("memory").Add(n)
	}
	m.Latency.Observe(at.Sub(p.At).Seconds())
}
