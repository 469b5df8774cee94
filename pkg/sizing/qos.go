package sizing

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// qosResources are the only resources that count for QoS.
var qosResources = [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// QoS returns the pod's QoS class by the algorithm of SPEC §7.4 (shared by admission and
// resize):
//   - only cpu and memory count, and zero quantities are ignored (treated as absent);
//   - when pod-level spec.resources is set (carries a non-zero cpu or memory request or
//     limit) it alone decides the class;
//   - otherwise, over all init and regular containers: BestEffort if no container has a
//     cpu or memory request or limit; Guaranteed iff every container has cpu and memory
//     limits and, per resource, its request equals its limit; else Burstable.
//
// A request is compared as written: callers that want the API server's view of a pod
// whose limits lack requests apply its defaulting first (see QoSWith).
func QoS(pod *corev1.Pod) corev1.PodQOSClass {
	if pr := pod.Spec.Resources; pr != nil && hasCompute(pr) {
		return classOf([]*corev1.ResourceRequirements{pr})
	}
	reqs := make([]*corev1.ResourceRequirements, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		reqs = append(reqs, &pod.Spec.InitContainers[i].Resources)
	}
	for i := range pod.Spec.Containers {
		reqs = append(reqs, &pod.Spec.Containers[i].Resources)
	}
	return classOf(reqs)
}

// hasCompute reports whether r has a non-zero cpu or memory request or limit.
func hasCompute(r *corev1.ResourceRequirements) bool {
	for _, res := range qosResources {
		if nonZero(r.Requests, res) != nil || nonZero(r.Limits, res) != nil {
			return true
		}
	}
	return false
}

func classOf(reqs []*corev1.ResourceRequirements) corev1.PodQOSClass {
	anyCompute, guaranteed := false, len(reqs) > 0
	for _, r := range reqs {
		for _, res := range qosResources {
			req, lim := nonZero(r.Requests, res), nonZero(r.Limits, res)
			if req != nil || lim != nil {
				anyCompute = true
			}
			if req == nil || lim == nil || req.Cmp(*lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !anyCompute:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}

func nonZero(list corev1.ResourceList, res corev1.ResourceName) *resource.Quantity {
	q, ok := list[res]
	if !ok || q.IsZero() {
		return nil
	}
	return &q
}

// QoSWith is the QoS class the API server will see for pod with changes written into it
// (its request defaulting included). With no changes it is the pod's own class.
func QoSWith(pod *corev1.Pod, changes []ContainerChanges) corev1.PodQOSClass {
	return QoS(WithChanges(pod, changes))
}
