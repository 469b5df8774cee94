package enrollment

import "github.com/prometheus/client_golang/prometheus"

// Events of ballast_pods_processed_total (SPEC §11.2).
const (
	EventCreated    = "created"
	EventDeleted    = "deleted"
	EventUnenrolled = "unenrolled"
)

// Metrics are the enrollment controller's instruments (SPEC §11.2).
type Metrics struct {
	// PodsProcessed is ballast_pods_processed_total{event, namespace, profile}.
	PodsProcessed *prometheus.CounterVec
	// ProfilesCreated is ballast_workload_profiles_created_total.
	ProfilesCreated prometheus.Counter
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		PodsProcessed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_pods_processed_total",
			Help: "Pod enrollment events."}, []string{"event", "namespace", "profile"}),
		ProfilesCreated: prometheus.NewCounter(prometheus.CounterOpts{Name: "ballast_workload_profiles_created_total",
			Help: "WorkloadProfiles created."}),
	}
	reg.MustRegister(m.PodsProcessed, m.ProfilesCreated)
	return m
}
