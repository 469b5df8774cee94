package webhook

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ballastk8s/ballast/pkg/control/metrics"
)

// Metrics are the admission webhook's instruments (SPEC §11.2).
type Metrics struct {
	// WebhookMutations is ballast_webhook_mutations_total{result, namespace}.
	WebhookMutations *prometheus.CounterVec
	// ApplyApplied is ballast_apply_applied_total{policy, namespace, profile}.
	ApplyApplied *prometheus.CounterVec
	// ApplySkipped is ballast_apply_skipped_total{reason, policy, namespace, profile}.
	ApplySkipped *prometheus.CounterVec
	// Clamped is the shared ballast_recommendation_clamped_total (phase "admission").
	Clamped *prometheus.CounterVec
	// Bounded is ballast_apply_bounded_total{reason, resource, policy, namespace, profile}:
	// values capped, clamped or held back by their bounds (sizing.Reason* bound reasons).
	Bounded *prometheus.CounterVec
	// StartupBoost is ballast_startup_boost_total{outcome}: admissions of pods whose policy
	// has a startup boost, by sizing.Boost* outcome (boosted, boost_capped, boost_no_room,
	// boost_no_cpu_request, boost_held).
	StartupBoost *prometheus.CounterVec
}

// NewMetrics creates the webhook's own instruments, registers them with reg, and records
// clamps into shared.
func NewMetrics(reg prometheus.Registerer, shared *metrics.Shared) *Metrics {
	m := &Metrics{
		WebhookMutations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_webhook_mutations_total",
			Help: "Admission decisions."}, []string{"result", "namespace"}),
		ApplyApplied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_apply_applied_total",
			Help: "Admissions that changed at least one value."}, []string{"policy", "namespace", "profile"}),
		ApplySkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_apply_skipped_total",
			Help: "Admissions that changed nothing."}, []string{"reason", "policy", "namespace", "profile"}),
		Bounded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_apply_bounded_total",
			Help: "Admission values capped, clamped or held back by LimitRanges, pod-level resources, quotas or the allowed range."},
			[]string{"reason", "resource", "policy", "namespace", "profile"}),
		StartupBoost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_startup_boost_total",
			Help: "Admissions of pods whose policy has a startup boost, by outcome."}, []string{"outcome"}),
		Clamped: shared.Clamped,
	}
	reg.MustRegister(m.WebhookMutations, m.ApplyApplied, m.ApplySkipped, m.Bounded, m.StartupBoost)
	return m
}
