package config

import "github.com/prometheus/client_golang/prometheus"

// Actions of ballast_kill_switch_suppressed_total (SPEC §10.2).
const (
	ActionAdmission = "admission"
	ActionResize    = "resize"
	ActionEnroll    = "enroll"
	ActionUnenroll  = "unenroll"
	ActionOutcome   = "outcome"
)

// Metrics are the kill switch's instruments (SPEC §11.2). Every component that suppresses
// an action records it through State.Suppress.
type Metrics struct {
	Transitions *prometheus.CounterVec
	Active      *prometheus.GaugeVec
	Suppressed  *prometheus.CounterVec
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_kill_switch_transitions_total",
			Help: "Kill switch activations and releases."}, []string{"transition"}),
		Active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_kill_switch_active",
			Help: "1 while the kill switch is active."}, []string{"reason"}),
		Suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_kill_switch_suppressed_total",
			Help: "Actions suppressed by the kill switch."}, []string{"action"}),
	}
	reg.MustRegister(m.Transitions, m.Active, m.Suppressed)
	return m
}
