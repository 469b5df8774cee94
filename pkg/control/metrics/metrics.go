// Package metrics holds the control plane's Prometheus instruments (SPEC §11.2). One
// Metrics value is created at start and passed to every controller; nothing here is global.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are ballast-control's instruments. Names follow SPEC §11.2 with dots replaced by
// underscores and counters suffixed _total. Sampling happens in the node agent, so
// ballast.samples.collected and ballast.fetch.errors are the agent's
// ballast_node_samples_total and ballast_node_source_errors_total (see docs/node-agent.md).
// The ballast.resize.* instruments are the resize controller's (pkg/control/resize).
type Metrics struct {
	ThresholdMet       *prometheus.CounterVec
	Profiles           *prometheus.GaugeVec
	PodsProcessed      *prometheus.CounterVec
	ProfilesCreated    prometheus.Counter
	ProfilesPurged     prometheus.Counter
	WebhookMutations   *prometheus.CounterVec
	ApplyApplied       *prometheus.CounterVec
	ApplySkipped       *prometheus.CounterVec
	Clamped            *prometheus.CounterVec
	KillSwitchChanges  *prometheus.CounterVec
	KillSwitchActive   *prometheus.GaugeVec
	KillSwitchSuppress *prometheus.CounterVec
	PoliciesInvalid    *prometheus.GaugeVec
	ProfileInfo        *ProfileInfo
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// New creates every instrument and registers it with reg (controller-runtime's registry in
// the binary, a fresh registry in tests).
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ThresholdMet:  counter("ballast_profiles_threshold_met_total", "Profiles whose meetsThreshold turned true.", "policy", "profile"),
		Profiles:      gauge("ballast_profiles", "Profiles by state.", "state", "profile"),
		PodsProcessed: counter("ballast_pods_processed_total", "Pod enrollment events.", "event", "namespace", "profile"),
		ProfilesCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ballast_workload_profiles_created_total", Help: "WorkloadProfiles created."}),
		ProfilesPurged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ballast_workload_profiles_purged_total", Help: "WorkloadProfiles deleted with their store data."}),
		WebhookMutations:   counter("ballast_webhook_mutations_total", "Admission decisions.", "result", "namespace"),
		ApplyApplied:       counter("ballast_apply_applied_total", "Admissions that changed at least one value.", "policy", "namespace", "profile"),
		ApplySkipped:       counter("ballast_apply_skipped_total", "Admissions that changed nothing.", "reason", "policy", "namespace", "profile"),
		Clamped:            counter("ballast_recommendation_clamped_total", "Requests clamped to their limit.", "container", "resource", "policy", "namespace", "phase", "profile"),
		KillSwitchChanges:  counter("ballast_kill_switch_transitions_total", "Kill switch activations and releases.", "transition"),
		KillSwitchActive:   gauge("ballast_kill_switch_active", "1 while the kill switch is active.", "reason"),
		KillSwitchSuppress: counter("ballast_kill_switch_suppressed_total", "Actions suppressed by the kill switch.", "action"),
		PoliciesInvalid:    gauge("ballast_policies_invalid", "1 per invalid policy.", "kind", "namespace", "name", "reason"),
		ProfileInfo:        NewProfileInfo(),
	}
	reg.MustRegister(m.ThresholdMet, m.Profiles, m.PodsProcessed,
		m.ProfilesCreated, m.ProfilesPurged, m.WebhookMutations, m.ApplyApplied, m.ApplySkipped, m.Clamped,
		m.KillSwitchChanges,
		m.KillSwitchActive, m.KillSwitchSuppress, m.PoliciesInvalid, m.ProfileInfo)
	return m
}
