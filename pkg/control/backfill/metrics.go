package backfill

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the backfill's instruments.
type Metrics struct {
	// Total is ballast_backfill_total{result}: backfills by outcome (the Result reasons).
	Total *prometheus.CounterVec
	// Samples is ballast_backfill_samples_total: samples written from Prometheus.
	Samples prometheus.Counter
	// Duration is ballast_backfill_duration_seconds: one backfill, queries and write.
	Duration prometheus.Histogram
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_backfill_total",
			Help: "Day-0 history backfills from Prometheus by result (Backfilled, AlreadyBackfilled, NoHistory, PrometheusUnavailable, BadAnswer, StoreError)."}, []string{"result"}),
		Samples: prometheus.NewCounter(prometheus.CounterOpts{Name: "ballast_backfill_samples_total",
			Help: "Samples written into the store from Prometheus by day-0 backfills."}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ballast_backfill_duration_seconds",
			Help:    "Time one day-0 backfill took (Prometheus queries and the store write).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}}),
	}
	for _, r := range []string{ResultBackfilled, ResultAlreadyDone, ResultNoHistory, ResultUnavailable, ResultBadAnswer, ResultStoreError} {
		m.Total.WithLabelValues(r)
	}
	reg.MustRegister(m.Total, m.Samples, m.Duration)
	return m
}
