package ballast

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

// budgetExplain is the disruption budget and rate limits as they stand for the pod's
// workload (docs/resize.md "Disruption budget"): whether a shrink would be held now, why
// and until when, and what caps a resize that restarts the container.
type budgetExplain struct {
	Workload string `json:"workload"`
	// ShrinkHold is the reason a shrink would be held now ("" = none) and its message.
	ShrinkHold    string `json:"shrinkHold,omitempty"`
	ShrinkMessage string `json:"shrinkMessage,omitempty"`
	// NextShrink is the earliest time a shrink may happen (RFC3339), or "now".
	NextShrink string `json:"nextShrink"`
	Cooldown   string `json:"cooldown"`
	Interval   string `json:"interval"`
	// Restarts lists the resources whose resize restarts the container (resizePolicy).
	Restarts    []string `json:"restarts,omitempty"`
	PerWorkload string   `json:"perWorkload"`
	PerNode     int32    `json:"perNode,omitempty"`
}

// explainBudget evaluates the shrink checks of the budget for pod at now from the
// profile's persisted history; nil without a profile or policy.
func explainBudget(pod *corev1.Pod, wp *ballastv1.WorkloadProfile, p *policy.Compiled, now time.Time) *budgetExplain {
	if pod == nil || wp == nil || p == nil || pod.Labels[ballastv1.ModeLabel] != ballastv1.ModeResize {
		return nil
	}
	w := resizeplan.WorkloadOf(pod)
	h := resizeplan.CheckBudget(resizeplan.BudgetInput{Now: now, Shrink: true, Workload: w,
		History: wp.Status.ResizeHistory, Resize: p.Resize})
	b := &budgetExplain{Workload: w, ShrinkHold: h.Reason, ShrinkMessage: h.Message, NextShrink: "now",
		Cooldown: p.Resize.Cooldown.String(), Interval: p.Resize.Interval.String(),
		PerWorkload: p.Resize.PerWorkload.String(), PerNode: p.Resize.PerNode}
	if !h.Until.IsZero() {
		b.NextShrink = h.Until.UTC().Format(time.RFC3339)
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, rp := range c.ResizePolicy {
			if rp.RestartPolicy == corev1.RestartContainer {
				b.Restarts = append(b.Restarts, c.Name+"/"+string(rp.ResourceName))
			}
		}
	}
	return b
}

func writeBudget(p *printer, b *budgetExplain) {
	if b == nil {
		return
	}
	if b.ShrinkHold != "" {
		p.f("  guard %s: %s", b.ShrinkHold, b.ShrinkMessage)
		p.f("  next shrink at %s (cooldown %s after an OOM kill, pressure raise or raise-back; one shrink per workload per %s)", b.NextShrink, b.Cooldown, b.Interval)
	} else {
		p.f("  guard: none holds a shrink of workload %s now (cooldown %s, one shrink per %s)", b.Workload, b.Cooldown, b.Interval)
	}
	if len(b.Restarts) > 0 {
		node := "no per-node cap"
		if b.PerNode > 0 {
			node = fmt.Sprintf("perNode %d", b.PerNode)
		}
		p.f("  restarting resizes (%s): respect the pod's PodDisruptionBudgets and maxConcurrentResizes perWorkload %s, %s",
			strings.Join(b.Restarts, ", "), b.PerWorkload, node)
	}
}
