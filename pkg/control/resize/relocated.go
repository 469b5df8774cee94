package resize

import (
	"context"
	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

// Rung 3's record (SPEC §15.5): the event on the old pod and the outcome it counts.
const (
	// EventRelocated is recorded on the old pod when the relocation retires it.
	EventRelocated = "Relocated"
	// OutcomeRelocated is ballast_resize_outcome_total's outcome for a relocated pod.
	OutcomeRelocated = "relocated"
)

// Relocated records a finished relocation: the stand-in is Ready on node and old is being
// retired. One Relocated event on old and one ballast_resize_outcome_total{outcome="relocated"}
// per call; the Relocator calls it once per relocation. The outcome's policy and profile
// attributes come from the existing WorkloadProfile (podAttrs), never from the pod's
// annotations, which whoever writes the pod chooses.
func (c *Controller) Relocated(ctx context.Context, old *corev1.Pod, standIn, node string) {
	pol, profile := c.podAttrs(ctx, old)
	c.metrics.Outcome.WithLabelValues(OutcomeRelocated, pol, old.Namespace, profile).Inc()
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungRelocate), "relocated").Inc()
	c.events.Publish(relocatedEvent(old, standIn, node))
	c.log.Info("pod relocated", "rung", resizeplan.RungRelocate, "namespace", old.Namespace, "pod", old.Name, "standIn", standIn, "node", node)
}
