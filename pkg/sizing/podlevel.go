package sizing

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ReasonPodLevelQoS: sizing the pod-level spec.resources would change the pod's QoS
// class, so they were kept as written (and container changes kept within them).
const ReasonPodLevelQoS = "pod_level_qos"

// PodPlan is the plan for a pod's pod-level spec.resources (policy podLevel: size).
type PodPlan struct {
	// Requests and Limits are the pod-level values after the plan (every resource the
	// author set, changed or not).
	Requests, Limits corev1.ResourceList
	// Changed is true when some value differs from the pod's.
	Changed bool
	// Notes say how each value was derived ("memory request = Σ container requests 320Mi").
	Notes []string
	// Held is ReasonPodLevelQoS when the pod-level values were kept as written.
	Held string
}

// podLevelResources are the resources pod-level spec.resources may carry and Ballast sizes.
var podLevelResources = [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// sizePodLevel derives the pod-level spec.resources of a pod that has them from its
// containers with written applied: only resources the author set are sized. A request
// becomes the containers' aggregate request; a limit the aggregate limit when every
// long-running container has one (else it stays); a resource whose request equalled its
// limit keeps them equal (the larger); a request never exceeds its limit and a limit
// never falls below the largest container limit. When the result would change the QoS
// class the pod-level values are kept as written (Held).
func sizePodLevel(pod *corev1.Pod, plan *Plan, written []ContainerChanges) *PodPlan {
	pr := pod.Spec.Resources
	if pr == nil || (len(pr.Requests) == 0 && len(pr.Limits) == 0) {
		return nil
	}
	after := WithChanges(pod, written)
	reqAgg, limAgg := aggregate(after, requestsOf), aggregate(after, limitsOf)
	pp := &PodPlan{Requests: pr.Requests.DeepCopy(), Limits: pr.Limits.DeepCopy()}
	for _, res := range podLevelResources {
		curReq, hasReq := pr.Requests[res]
		curLim, hasLim := pr.Limits[res]
		newReq, newLim := curReq.DeepCopy(), curLim.DeepCopy()
		if agg, ok := reqAgg[res]; ok && hasReq {
			newReq = agg.DeepCopy()
			pp.Notes = append(pp.Notes, fmt.Sprintf("%s request = Σ container requests %s", res, agg.String()))
		}
		if agg, ok := limAgg[res]; ok && hasLim && everyLimited(after, res) {
			newLim = agg.DeepCopy()
			pp.Notes = append(pp.Notes, fmt.Sprintf("%s limit = Σ container limits %s", res, agg.String()))
		}
		if hasLim {
			if m, ok := largestLimit(after, res); ok && m.Cmp(newLim) > 0 {
				newLim = m
				pp.Notes = append(pp.Notes, fmt.Sprintf("%s limit raised to the largest container limit %s", res, m.String()))
			}
			if agg, ok := reqAgg[res]; ok && agg.Cmp(newLim) > 0 {
				newLim = agg.DeepCopy()
				pp.Notes = append(pp.Notes, fmt.Sprintf("%s limit raised to the containers' aggregate request %s", res, agg.String()))
			}
		}
		switch {
		case hasReq && hasLim && curReq.Cmp(curLim) == 0:
			// The author pinned request = limit: keep them equal, at the larger.
			if newReq.Cmp(newLim) > 0 {
				newLim = newReq.DeepCopy()
			}
			newReq = newLim.DeepCopy()
		case hasReq && hasLim && newReq.Cmp(newLim) > 0:
			newLim = newReq.DeepCopy()
			pp.Notes = append(pp.Notes, fmt.Sprintf("%s limit raised to the request %s", res, newReq.String()))
		}
		if hasReq {
			pp.Requests[res] = newReq
			pp.Changed = pp.Changed || newReq.Cmp(curReq) != 0
		}
		if hasLim {
			pp.Limits[res] = newLim
			pp.Changed = pp.Changed || newLim.Cmp(curLim) != 0
		}
	}
	if !pp.Changed {
		return pp
	}
	sized := after.DeepCopy()
	sized.Spec.Resources.Requests, sized.Spec.Resources.Limits = pp.Requests.DeepCopy(), pp.Limits.DeepCopy()
	if QoS(sized) != plan.QoSBefore {
		pp.Requests, pp.Limits = pr.Requests.DeepCopy(), pr.Limits.DeepCopy()
		pp.Changed, pp.Held = false, ReasonPodLevelQoS
		pp.Notes = append(pp.Notes, fmt.Sprintf("kept as written: sized values would change the QoS class from %s to %s", plan.QoSBefore, QoS(sized)))
	}
	return pp
}

func everyLimited(pod *corev1.Pod, res corev1.ResourceName) bool {
	for _, ref := range LongRunning(&pod.Spec) {
		q, ok := ref.Container(&pod.Spec).Resources.Limits[res]
		if !ok || q.IsZero() {
			return false
		}
	}
	return true
}

func largestLimit(pod *corev1.Pod, res corev1.ResourceName) (resource.Quantity, bool) {
	var out resource.Quantity
	found := false
	for _, c := range allContainers(pod) {
		if q, ok := c.Resources.Limits[res]; ok && (!found || q.Cmp(out) > 0) {
			out, found = q.DeepCopy(), true
		}
	}
	return out, found
}

// String renders the plan's values for the applied-pod-resources annotation:
// "requests cpu=300m,memory=320Mi; limits memory=640Mi".
func (pp *PodPlan) String() string {
	list := func(l corev1.ResourceList) string {
		names := make([]string, 0, len(l))
		for res := range l {
			names = append(names, string(res))
		}
		sort.Strings(names)
		parts := make([]string, 0, len(names))
		for _, n := range names {
			q := l[corev1.ResourceName(n)]
			parts = append(parts, n+"="+q.String())
		}
		return strings.Join(parts, ",")
	}
	var out []string
	if len(pp.Requests) > 0 {
		out = append(out, "requests "+list(pp.Requests))
	}
	if len(pp.Limits) > 0 {
		out = append(out, "limits "+list(pp.Limits))
	}
	return strings.Join(out, "; ")
}
