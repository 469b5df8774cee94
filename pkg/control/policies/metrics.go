package policies

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the policies controllers' instruments (SPEC §11.2); one value serves both
// kinds.
type Metrics struct {
	// Invalid is ballast_policies_invalid{kind, namespace, name, reason}: 1 per invalid policy.
	Invalid *prometheus.GaugeVec
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Invalid: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_policies_invalid",
		Help: "1 per invalid policy."}, []string{"kind", "namespace", "name", "reason"})}
	reg.MustRegister(m.Invalid)
	return m
}
