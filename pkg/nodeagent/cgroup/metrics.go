package cgroup

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the cgroup source's instruments. A nil *Metrics records nothing, so tests
// and callers without a registry pass nil.
type Metrics struct {
	CollectDuration prometheus.Histogram
	Errors          *prometheus.CounterVec
}

// Error kinds of ballast_node_cgroup_errors_total.
const (
	ErrorKindLocate       = "locate"
	ErrorKindRead         = "read"
	ErrorKindCounterReset = "counter_reset"
	ErrorKindPeak         = "peak"
)

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		CollectDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ballast_node_cgroup_collect_duration_seconds",
			Help:    "Time to read the cgroup files of every sampled container once.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ballast_node_cgroup_errors_total",
			Help: "cgroup readings that failed or were rejected, by kind (locate, read, counter_reset, peak).",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.CollectDuration, m.Errors)
	return m
}

func (m *Metrics) observeDuration(d time.Duration) {
	if m != nil {
		m.CollectDuration.Observe(d.Seconds())
	}
}

func (m *Metrics) countError(kind string) {
	if m != nil {
		m.Errors.WithLabelValues(kind).Inc()
	}
}
