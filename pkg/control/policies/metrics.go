package policies

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the policies controllers' instruments (SPEC §11.2); one value serves both
// kinds.
type Metrics struct {
	// Invalid is ballast_policies_invalid{kind, namespace, name, reason}: 1 per invalid policy.
	Invalid *prometheus.GaugeVec
	// TakenOver is ballast_policy_profiles_taken_over{kind, namespace, name}: profiles with
	// history accrued under another policy whose pods now resolve to this one.
	TakenOver *prometheus.GaugeVec
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Invalid: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_policies_invalid",
		Help: "1 per invalid policy."}, []string{"kind", "namespace", "name", "reason"}),
		TakenOver: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_policy_profiles_taken_over",
			Help: "Profiles with history, accrued under another policy, whose pods now resolve to this policy."},
			[]string{"kind", "namespace", "name"})}
	reg.MustRegister(m.Invalid, m.TakenOver)
	return m
}
