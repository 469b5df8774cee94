package oom

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the OOM watcher's instruments. A nil *Metrics records nothing.
type Metrics struct {
	Kills       *prometheus.CounterVec
	WatchErrors prometheus.Counter
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Kills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ballast_node_oom_kills_total",
			Help: "OOM kills observed in watched containers, by the limit that was hit (container, pod, node).",
		}, []string{"kind"}),
		WatchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ballast_node_oom_watch_errors_total",
			Help: "memory.events reads or inotify reads that failed.",
		}),
	}
	reg.MustRegister(m.Kills, m.WatchErrors)
	return m
}

func (m *Metrics) kill(e Event) {
	if m != nil {
		m.Kills.WithLabelValues(string(e.Kind)).Add(float64(e.Count))
	}
}

func (m *Metrics) watchError() {
	if m != nil {
		m.WatchErrors.Inc()
	}
}
