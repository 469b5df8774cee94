package resizeplan

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

// ShrunkContainers returns, for each container that changes cut (any cpu or memory request
// or limit lowered), its full resources in pod before the change. Empty for a pure growth.
func ShrunkContainers(pod *corev1.Pod, changes []sizing.ContainerChanges) []ContainerTarget {
	var out []ContainerTarget
	for _, ch := range changes {
		next, ok := ch.Applied(pod)
		if !ok {
			continue
		}
		cur := ch.Container(pod)
		if lowers(cur.Resources.Requests, next.Requests) || lowers(cur.Resources.Limits, next.Limits) {
			out = append(out, ContainerTarget{Name: ch.Name, Sidecar: ch.Sidecar,
				Requests: nonNil(cur.Resources.Requests).DeepCopy(), Limits: nonNil(cur.Resources.Limits).DeepCopy()})
		}
	}
	return out
}

// lowers reports whether after sets a cpu or memory value below before's.
func lowers(before, after corev1.ResourceList) bool {
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		b, okB := before[r]
		a, okA := after[r]
		if okB && okA && a.Cmp(b) < 0 {
			return true
		}
	}
	return false
}

// RaiseBack returns the changes that put every value the shrink lowered back to its
// pre-shrink value; values that are now higher stay. Each request and limit becomes
// max(pre-shrink, current), so request ≤ limit holds and a Guaranteed container stays
// Guaranteed. floorMem (when > 0) raises container floorCtr's memory limit to at least
// that many bytes (an OOM bump above the pre-shrink limit), its request with it when the
// two are equal (liftLimit).
func RaiseBack(pod *corev1.Pod, before []ContainerTarget, floorCtr string, floorMem int64) []sizing.ContainerChanges {
	var out []sizing.ContainerChanges
	for _, ch := range sizing.LongRunningChanges(pod) {
		cur := ch.Container(pod)
		for _, b := range before {
			if b.Name == ch.Name {
				ch.Requests = raised(cur.Resources.Requests, b.Requests)
				ch.Limits = raised(cur.Resources.Limits, b.Limits)
			}
		}
		if ch.Name == floorCtr && floorMem > 0 {
			lim, ok := cur.Resources.Limits[corev1.ResourceMemory]
			if v, set := ch.Limits[corev1.ResourceMemory]; set {
				lim = v
			}
			if ok && lim.Value() < floorMem {
				req, hasReq := cur.Resources.Requests[corev1.ResourceMemory]
				if v, set := ch.Requests[corev1.ResourceMemory]; set {
					req = v
				}
				liftLimit(&ch, corev1.ResourceMemory, req, hasReq, lim, *resource.NewQuantity(floorMem, resource.BinarySI))
			}
		}
		if len(ch.Requests) > 0 || len(ch.Limits) > 0 {
			out = append(out, ch)
		}
	}
	return out
}

// raised returns the cpu and memory values of pre that are above cur's.
func raised(cur, pre corev1.ResourceList) corev1.ResourceList {
	var out corev1.ResourceList
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		p, okP := pre[r]
		c, okC := cur[r]
		if okP && okC && c.Cmp(p) < 0 {
			out = setRes(out, r, p)
		}
	}
	return out
}
