package sizing

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Result is the admission decision for one pod (SPEC §7.3–§7.5), rendered from a Plan.
type Result struct {
	// Changes per long-running container, in processing order (native sidecars, then
	// regular containers, each in spec order). Containers with nothing to write and
	// pinned containers are absent.
	Changes []ContainerChanges
	// Annotations are the applied-<res>-<field> and clamped-<res>-request annotations to
	// write; the last written value in processing order wins.
	Annotations map[string]string
	// Clamps lists every request held at its bound, written or not (an already
	// Guaranteed pod clamps to an unchanged value and writes nothing, but the clamp is
	// still counted). Pinned containers' clamps are included.
	Clamps []Clamp
	// Pinned names the containers whose changes were dropped to keep the QoS class.
	// When the remaining changes together still change the class, the whole pod is left
	// unpatched and every container that had changes is listed.
	Pinned []string
	// SkipReason is ReasonQoSPinned when pinning removed every change, a bound reason
	// (ReasonLimitRange, ReasonPodResources, ReasonQuota) when the bounds held every
	// change back, ReasonNoChange when there was nothing to write, and empty when Changes
	// is not empty.
	SkipReason string
	// Bounded are the values the bounds capped, clamped or held back (Plan.Bounded).
	// When Changes is not empty their Summary is the bounded annotation.
	Bounded []BoundNote
	// Pod is the pod-level spec.resources to write (policy podLevel: size), nil when
	// nothing changes there; written only together with container changes.
	Pod *PodPlan
	// Runtimes are the runtime memory notes of the plan (floors, detected runtimes).
	Runtimes []RuntimeNote
}

// Admission computes the changes the webhook writes into a pod at creation: Calculate
// with AtOnce, pinned containers dropped (SPEC §7.4), rendered with the applied-* and
// clamped-* annotations of the values actually written.
func Admission(pod *corev1.Pod, recs Recommendations, p Params) Result {
	return AdmissionResult(Calculate(pod, recs, p, AtOnce))
}

// AdmissionResult renders an AtOnce plan as the admission decision.
func AdmissionResult(plan Plan) Result {
	res := Result{Annotations: map[string]string{}}
	for _, cp := range plan.Containers {
		for _, rp := range cp.Resources {
			if rp.Request.Clamped {
				res.Clamps = append(res.Clamps, clampOf(cp.Name, rp))
			}
		}
		ch := cp.Changes()
		if cp.Pinned {
			res.Pinned = append(res.Pinned, cp.Name)
			continue
		}
		if ch.empty() {
			continue
		}
		res.Changes = append(res.Changes, ch)
		for _, rp := range cp.Resources {
			annotate(res.Annotations, rp)
		}
	}
	res.Bounded, res.Runtimes = plan.Bounded, plan.Runtimes
	if len(res.Changes) == 0 {
		res.SkipReason = ReasonNoChange
		switch {
		case plan.HeldAll != "":
			res.SkipReason = plan.HeldAll
		case len(res.Pinned) > 0:
			res.SkipReason = ReasonQoSPinned
		default:
			for _, n := range plan.Bounded {
				if n.Held {
					res.SkipReason = n.Reason
				}
			}
		}
		return res
	}
	if len(plan.Bounded) > 0 {
		res.Annotations[v1.BoundedAnnotation] = Summary(plan.Bounded)
	}
	if s := RuntimeSummary(plan.Runtimes); s != "" {
		res.Annotations[v1.RuntimeFloorAnnotation] = s
	}
	if plan.Pod != nil && plan.Pod.Changed {
		res.Pod = plan.Pod
		res.Annotations[v1.AppliedPodResourcesAnnotation] = plan.Pod.String()
	}
	return res
}

func clampOf(container string, rp ResourcePlan) Clamp {
	return Clamp{Container: container, Resource: rp.Resource,
		Recommended: rp.Request.PreClamp, Limit: rp.Request.Bound, Written: rp.Request.Target}
}

// annotate records the written values of one resource, limit first: applied-<res>-<field>,
// and for a request clamped-<res>-request when it was clamped (removed otherwise, so the
// pair always describes the same write).
func annotate(annotations map[string]string, rp ResourcePlan) {
	res := rp.Resource
	if rp.Limit.Changed {
		annotations[v1.AppliedAnnotation(string(res), string(Limit))] = rp.Limit.Target.String(res)
	}
	if !rp.Request.Changed {
		return
	}
	annotations[v1.AppliedAnnotation(string(res), string(Request))] = rp.Request.Target.String(res)
	if rp.Request.Clamped {
		annotations[v1.ClampedAnnotation(string(res))] = rp.Request.PreClamp.String(res)
	} else {
		delete(annotations, v1.ClampedAnnotation(string(res)))
	}
}
