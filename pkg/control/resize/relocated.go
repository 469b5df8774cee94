package resize

import (
	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
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
// per call; the Relocator calls it once per relocation.
func (c *Controller) Relocated(old *corev1.Pod, standIn, node string) {
	c.metrics.Outcome.WithLabelValues(OutcomeRelocated, policyOf(old), old.Namespace, old.Annotations[ballastv1.ProfileRefAnnotation]).Inc()
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungRelocate), "relocated").Inc()
	c.events.Publish(relocatedEvent(old, standIn, node))
	c.log.Info("pod relocated", "rung", resizeplan.RungRelocate, "namespace", old.Namespace, "pod", old.Name, "standIn", standIn, "node", node)
}
