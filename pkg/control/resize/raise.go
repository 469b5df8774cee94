package resize

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

// memoryRaise is the change of a fast raise (OOM kill, sustained pressure): ctr's memory
// limit from lim to newLim, and its request with it when it equalled the limit, so request
// ≤ limit holds and a Guaranteed pod stays Guaranteed. qosBefore and qosAfter are the pod's
// QoS class without and with the change; a raise that would change it is not sent.
func memoryRaise(pod *corev1.Pod, ctr *corev1.Container, lim, newLim resource.Quantity) (ch sizing.ContainerChanges, qosBefore, qosAfter corev1.PodQOSClass) {
	ch = sizing.ContainerChanges{Name: ctr.Name, Limits: corev1.ResourceList{corev1.ResourceMemory: newLim}}
	for _, lr := range longRunningChanges(pod) {
		if lr.Name == ctr.Name {
			ch.Sidecar, ch.Index = lr.Sidecar, lr.Index
		}
	}
	if req, ok := ctr.Resources.Requests[corev1.ResourceMemory]; ok && req.Cmp(lim) == 0 {
		ch.Requests = corev1.ResourceList{corev1.ResourceMemory: newLim}
	}
	after := pod.DeepCopy()
	for _, t := range targetsOf(pod, []sizing.ContainerChanges{ch}) {
		if c := containerOf(after, t.Name); c != nil {
			c.Resources.Requests, c.Resources.Limits = t.Requests, t.Limits
		}
	}
	return ch, sizing.QoS(pod), sizing.QoS(after)
}
