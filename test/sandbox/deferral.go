package sandbox

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeferResizeLabel ("true") on a pod makes the simulated kubelet defer every in-place
// resize of it once it runs, the way the kubelet of a node without room does
// (SIMULATED: no kubelet runs here): the new generation is observed, PodResizePending is
// True with reason Deferred, and the allocated and actual resources keep their values.
const DeferResizeLabel = "sandbox.ballast/kubelet-defers-resize"

// defers reports whether the simulated kubelet leaves p's new generation Deferred: the pod
// asks for deferral and its container statuses already carry resources (the first fill at
// start is never deferred).
func defers(p *corev1.Pod) bool {
	if p.Labels[DeferResizeLabel] != "true" || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Resources == nil {
			return false
		}
	}
	return true
}

// deferResize writes the Deferred status of p's current generation once.
func (n *Node) deferResize(ctx context.Context, p *corev1.Pod) {
	if p.Status.ObservedGeneration >= p.Generation {
		return
	}
	p.Status.ObservedGeneration = p.Generation
	cond := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: "Deferred",
		Message:            fmt.Sprintf("Node didn't have enough resource: cpu (simulated kubelet of %s)", n.Name),
		ObservedGeneration: p.Generation, LastTransitionTime: metav1.Now()}
	kept := p.Status.Conditions[:0]
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodResizePending {
			kept = append(kept, c)
		}
	}
	p.Status.Conditions = append(kept, cond)
	_ = n.c.Status().Update(ctx, p) // a conflict is retried on the next tick
}
