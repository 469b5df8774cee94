// Package metrics holds the control-plane instrument more than one component records:
// ballast_recommendation_clamped_total, written by admission (phase "admission") and by
// resize (phase "resize"). Every other instrument of SPEC §11.2 lives in the metrics.go of
// the controller that records it (config: kill switch; policies; enrollment; profiles;
// webhook). Sampling happens in the node agent, so ballast.samples.collected and
// ballast.fetch.errors are the agent's ballast_node_samples_total and
// ballast_node_source_errors_total (see docs/node-agent.md).
package metrics

import "github.com/prometheus/client_golang/prometheus"

// Phases of ballast_recommendation_clamped_total.
const (
	PhaseAdmission = "admission"
	PhaseResize    = "resize"
)

// Shared are the instruments recorded by more than one component.
type Shared struct {
	// Clamped is ballast_recommendation_clamped_total{container, resource, policy,
	// namespace, phase, profile}.
	Clamped *prometheus.CounterVec
}

// NewShared creates the instruments and registers them with reg (controller-runtime's
// registry in the binary, a fresh registry in tests).
func NewShared(reg prometheus.Registerer) *Shared {
	m := &Shared{Clamped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_recommendation_clamped_total",
		Help: "Requests clamped to their limit."}, []string{"container", "resource", "policy", "namespace", "phase", "profile"})}
	reg.MustRegister(m.Clamped)
	return m
}
