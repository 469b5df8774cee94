package kubelet

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the kubelet source's instruments. A nil *Metrics records nothing.
type Metrics struct {
	Duration prometheus.Histogram
	Requests *prometheus.CounterVec
	Skipped  *prometheus.CounterVec
}

// Results of ballast_node_kubelet_summary_requests_total.
const (
	resultOK             = "ok"
	resultUnauthorized   = "unauthorized"
	resultForbidden      = "forbidden"
	resultHTTPError      = "http_error"
	resultTransportError = "transport_error"
	resultDecodeError    = "decode_error"
	resultTokenError     = "token_error"
)

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ballast_node_kubelet_summary_duration_seconds",
			Help:    "Time to fetch and decode the kubelet Summary API.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ballast_node_kubelet_summary_requests_total",
			Help: "Summary API requests by result (ok, unauthorized, forbidden, http_error, transport_error, decode_error, token_error).",
		}, []string{"result"}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ballast_node_kubelet_readings_skipped_total",
			Help: "Summary readings skipped because fields were missing, by signal.",
		}, []string{"signal"}),
	}
	reg.MustRegister(m.Duration, m.Requests, m.Skipped)
	return m
}

func (m *Metrics) duration(d time.Duration) {
	if m != nil {
		m.Duration.Observe(d.Seconds())
	}
}

func (m *Metrics) request(result string) {
	if m != nil {
		m.Requests.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) skipped(s Signal) {
	if m != nil {
		m.Skipped.WithLabelValues(string(s)).Inc()
	}
}
