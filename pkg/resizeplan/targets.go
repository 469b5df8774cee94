package resizeplan

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

// TargetsOf are the full proposed resources of each container changes address, as the API
// server will hold them once the patch is accepted (sizing's ContainerChanges.Applied, the
// container of sizing.WithChanges). Changes that address no container are left out.
func TargetsOf(pod *corev1.Pod, changes []sizing.ContainerChanges) []ContainerTarget {
	out := make([]ContainerTarget, 0, len(changes))
	for _, ch := range changes {
		r, ok := ch.Applied(pod)
		if !ok {
			continue
		}
		out = append(out, ContainerTarget{Name: ch.Name, Sidecar: ch.Sidecar, Requests: nonNil(r.Requests), Limits: nonNil(r.Limits)})
	}
	return out
}

// SpecTargets are the current (desired) resources of the pod's long-running containers.
func SpecTargets(pod *corev1.Pod) []ContainerTarget {
	return TargetsOf(pod, sizing.LongRunningChanges(pod))
}

// WithTargets returns changes carrying the given full targets (same containers, order and
// indexes), for rendering a capped or reverted proposal.
func WithTargets(changes []sizing.ContainerChanges, ts []ContainerTarget) []sizing.ContainerChanges {
	byName := make(map[string]ContainerTarget, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	out := make([]sizing.ContainerChanges, 0, len(changes))
	for _, ch := range changes {
		if t, ok := byName[ch.Name]; ok {
			ch.Requests, ch.Limits = t.Requests, t.Limits
		}
		out = append(out, ch)
	}
	return out
}

// ContainerNamed returns the pod's container (regular or init) called name, nil when
// there is none.
func ContainerNamed(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// Unchanged reports whether the targets are the containers' current resources.
func Unchanged(pod *corev1.Pod, ts []ContainerTarget) bool {
	for _, t := range ts {
		c := ContainerNamed(pod, t.Name)
		if c == nil || !equality.Semantic.DeepEqual(nonNil(c.Resources.Requests), nonNil(t.Requests)) ||
			!equality.Semantic.DeepEqual(nonNil(c.Resources.Limits), nonNil(t.Limits)) {
			return false
		}
	}
	return true
}

func nonNil(l corev1.ResourceList) corev1.ResourceList {
	if l == nil {
		return corev1.ResourceList{}
	}
	return l
}

// AllocatedPod is pod with each container's requests and limits set to what the kubelet
// allocated and actuated (status), the values a Deferred resize grows from.
func AllocatedPod(pod *corev1.Pod) *corev1.Pod {
	base := pod.DeepCopy()
	status := map[string]corev1.ContainerStatus{}
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		status[s.Name] = s
	}
	set := func(c *corev1.Container) {
		s, ok := status[c.Name]
		if !ok {
			return
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := s.AllocatedResources[res]; ok {
				c.Resources.Requests[res] = q
			}
			if s.Resources != nil {
				if q, ok := s.Resources.Limits[res]; ok && c.Resources.Limits != nil {
					c.Resources.Limits[res] = q
				}
			}
		}
	}
	for i := range base.Spec.InitContainers {
		if base.Spec.InitContainers[i].Resources.Requests != nil {
			set(&base.Spec.InitContainers[i])
		}
	}
	for i := range base.Spec.Containers {
		if base.Spec.Containers[i].Resources.Requests != nil {
			set(&base.Spec.Containers[i])
		}
	}
	return base
}

// capDeferred is rung 4 for a pod already Deferred: its ask is lowered to what the node
// can hold next to every other pod, growing from what the kubelet allocated; when nothing

// MemoryRaise is the change of a fast raise (OOM kill, sustained pressure): ctr's memory
// limit from lim to newLim, and its request with it when it equalled the limit (liftLimit).
// qosBefore and qosAfter are the pod's QoS class without and with the change, by the rule
// the calculator uses (sizing.QoSWith); a raise that would change it is not sent.
func MemoryRaise(pod *corev1.Pod, ctr *corev1.Container, lim, newLim resource.Quantity) (ch sizing.ContainerChanges, qosBefore, qosAfter corev1.PodQOSClass) {
	for _, lr := range sizing.LongRunningChanges(pod) {
		if lr.Name == ctr.Name {
			ch = lr
		}
	}
	ch.Name = ctr.Name
	req, hasReq := ctr.Resources.Requests[corev1.ResourceMemory]
	liftLimit(&ch, corev1.ResourceMemory, req, hasReq, lim, newLim)
	return ch, sizing.QoSWith(pod, nil), sizing.QoSWith(pod, []sizing.ContainerChanges{ch})
}

// liftLimit sets ch's res limit (lim in effect) to q, and its request with it when the
// request in effect (req, when hasReq) equals the limit: request ≤ limit holds and a
// Guaranteed container stays Guaranteed.
func liftLimit(ch *sizing.ContainerChanges, res corev1.ResourceName, req resource.Quantity, hasReq bool, lim, q resource.Quantity) {
	ch.Limits = setRes(ch.Limits, res, q)
	if hasReq && req.Cmp(lim) == 0 {
		ch.Requests = setRes(ch.Requests, res, q)
	}
}

func setRes(l corev1.ResourceList, r corev1.ResourceName, q resource.Quantity) corev1.ResourceList {
	if l == nil {
		l = corev1.ResourceList{}
	}
	l[r] = q
	return l
}
