package resize

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Metrics are the resize controller's instruments (SPEC §11.2), plus the Deferred
// ladder's and fast raises' own. Clamped is shared with admission (phase="admission"), so
// its owner (pkg/control/metrics) creates it and passes it in; kill-switch suppressions are
// counted through config.State.Suppress.
type Metrics struct {
	Applied *prometheus.CounterVec // ballast_resize_applied_total{policy,namespace,profile}
	Failed  *prometheus.CounterVec // ballast_resize_failed_total{policy,namespace,profile}
	Skipped *prometheus.CounterVec // ballast_resize_skipped_total{reason,policy,namespace,profile}
	Outcome *prometheus.CounterVec // ballast_resize_outcome_total{outcome,policy,namespace,profile}
	// Ladder counts Deferred-ladder steps: ballast_resize_ladder_total{rung,result}.
	Ladder *prometheus.CounterVec
	// GuardNodes is the number of nodes on which Ballast holds its guard key.
	GuardNodes prometheus.Gauge
	// Raises counts fast raises: ballast_resize_raises_total{trigger,result}.
	Raises *prometheus.CounterVec
	// Reverts counts raise-backs after a shrink:
	// ballast_resize_reverts_total{trigger,result,namespace,profile}.
	Reverts *prometheus.CounterVec
	// Planned counts the planner's decisions per interval: ballast_resize_planned_total{decision}.
	Planned *prometheus.CounterVec
	// Unboosted counts startup boosts taken back in place: ballast_startup_boost_ended_total.
	Unboosted prometheus.Counter
	// Held counts resizes the disruption budget held back:
	// ballast_resize_held_total{reason,policy,namespace,profile}.
	Held *prometheus.CounterVec

	// Clamped is ballast_recommendation_clamped_total{container,resource,policy,namespace,phase,profile}.
	Clamped *prometheus.CounterVec
}

// NewMetrics creates the resize instruments and registers them with reg. clamped is the
// shared counter (not registered here); a nil one is created unregistered, so tests need
// not build it.
func NewMetrics(reg prometheus.Registerer, clamped *prometheus.CounterVec) *Metrics {
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	if clamped == nil {
		clamped = c("ballast_recommendation_clamped_total", "Requests clamped to their limit.", "container", "resource", "policy", "namespace", "phase", "profile")
	}
	m := &Metrics{
		Applied:    c("ballast_resize_applied_total", "Accepted in-place resizes.", "policy", "namespace", "profile"),
		Failed:     c("ballast_resize_failed_total", "Rejected in-place resizes.", "policy", "namespace", "profile"),
		Skipped:    c("ballast_resize_skipped_total", "Resize evaluations that issued no patch.", "reason", "policy", "namespace", "profile"),
		Outcome:    c("ballast_resize_outcome_total", "Observed resize outcomes.", "outcome", "policy", "namespace", "profile"),
		Ladder:     c("ballast_resize_ladder_total", "Deferred-ladder steps by rung and result.", "rung", "result"),
		GuardNodes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ballast_resize_guard_nodes", Help: "Nodes on which Ballast holds its resize-preemption guard key."}),
		Raises:     c("ballast_resize_raises_total", "Fast in-place raises by trigger and result.", "trigger", "result"),
		Reverts:    c("ballast_resize_reverts_total", "Pods raised back to their pre-shrink size after an OOM kill or NotReady.", "trigger", "result", "namespace", "profile"),
		Planned:    c("ballast_resize_planned_total", "Node planner decisions.", "decision"),
		Unboosted: prometheus.NewCounter(prometheus.CounterOpts{Name: "ballast_startup_boost_ended_total",
			Help: "Startup boosts taken back in place after the pod was Ready for readyFor."}),
		Held:    c("ballast_resize_held_total", "Resizes held back by the disruption budget and rate limits, by reason.", "reason", "policy", "namespace", "profile"),
		Clamped: clamped,
	}
	if reg != nil {
		reg.MustRegister(m.Applied, m.Failed, m.Skipped, m.Outcome, m.Ladder, m.GuardNodes, m.Raises, m.Reverts, m.Planned, m.Unboosted, m.Held)
	}
	return m
}

// podAttrs are the policy and profile attributes of a pod's resize metrics, read from the
// profile its profile-ref annotation names. Anyone who may patch the pod can write its
// profile-ref and policy-ref, so a name no profile has counts as "" for both, and the
// policy is the profile's own (status.policyRef), never the pod's annotation: the series
// count follows profiles, not what is written on pods.
func (c *Controller) podAttrs(ctx context.Context, pod *corev1.Pod) (policy, profile string) {
	name := pod.Annotations[ballastv1.ProfileRefAnnotation]
	wp := &ballastv1.WorkloadProfile{}
	if name == "" || c.client.Get(ctx, client.ObjectKey{Name: name}, wp) != nil {
		return "", ""
	}
	if r := wp.Status.PolicyRef; r != nil {
		policy = ballastv1.PolicyRefValue(r.Namespace, r.Name)
	}
	return policy, name
}
