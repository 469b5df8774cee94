package profiles

import "github.com/prometheus/client_golang/prometheus"

// States of ballast_profiles (SPEC §11.2).
const (
	StateAccruing = "accruing"
	StateReady    = "ready"
)

// Metrics are the profiles controller's instruments (SPEC §11.2).
type Metrics struct {
	// ThresholdMet is ballast_profiles_threshold_met_total{policy, profile}.
	ThresholdMet *prometheus.CounterVec
	// Profiles is ballast_profiles{state, profile}: 1 per profile with statistics.
	Profiles *prometheus.GaugeVec
	// Purged is ballast_workload_profiles_purged_total.
	Purged prometheus.Counter
	// Info is ballast_profile_info{profile, <identity attributes>}.
	Info *ProfileInfo
	// ReclaimableCPU is ballast_profile_reclaimable_cpu_cores{profile}, ReclaimableMemory
	// ballast_profile_reclaimable_memory_bytes{profile}: what the bound pods request above
	// the recommendation (pkg/savings); MonthlySavings is
	// ballast_profile_monthly_savings{profile}, that capacity's monthly cost at the
	// configured prices (no series without a price).
	ReclaimableCPU, ReclaimableMemory, MonthlySavings *prometheus.GaugeVec
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ThresholdMet: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_profiles_threshold_met_total",
			Help: "Profiles whose meetsThreshold turned true."}, []string{"policy", "profile"}),
		Profiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_profiles",
			Help: "Profiles by state."}, []string{"state", "profile"}),
		Purged: prometheus.NewCounter(prometheus.CounterOpts{Name: "ballast_workload_profiles_purged_total",
			Help: "WorkloadProfiles deleted with their store data."}),
		Info: NewProfileInfo(),
		ReclaimableCPU: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_profile_reclaimable_cpu_cores",
			Help: "CPU cores the profile's bound pods request above its recommendation, summed over the pods."}, []string{"profile"}),
		ReclaimableMemory: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_profile_reclaimable_memory_bytes",
			Help: "Memory bytes the profile's bound pods request above its recommendation, summed over the pods."}, []string{"profile"}),
		MonthlySavings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ballast_profile_monthly_savings",
			Help: "Monthly cost of the profile's reclaimable cpu and memory at the configured prices (ballast-control --price-cpu-hour, --price-gib-hour)."}, []string{"profile"}),
	}
	reg.MustRegister(m.ThresholdMet, m.Profiles, m.Purged, m.Info, m.ReclaimableCPU, m.ReclaimableMemory, m.MonthlySavings)
	return m
}

// setState records the profile's state series, removing the other one.
func (m *Metrics) setState(profile, state string) {
	m.clearState(profile)
	m.Profiles.WithLabelValues(state, profile).Set(1)
}

// clearState removes the profile's series of the ballast_profiles gauge.
func (m *Metrics) clearState(profile string) {
	for _, s := range []string{StateAccruing, StateReady} {
		m.Profiles.DeleteLabelValues(s, profile)
	}
}

// forget drops every series of a profile.
func (m *Metrics) forget(profile string) {
	m.Info.Delete(profile)
	m.clearState(profile)
	m.ReclaimableCPU.DeleteLabelValues(profile)
	m.ReclaimableMemory.DeleteLabelValues(profile)
	m.MonthlySavings.DeleteLabelValues(profile)
}
