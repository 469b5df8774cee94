package sizing

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Result is the admission decision for one pod (SPEC §7.3–§7.5).
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
	// SkipReason is ReasonQoSPinned when pinning removed every change, ReasonNoChange
	// when there was nothing to write, and empty when Changes is not empty.
	SkipReason string
}

// Admission computes the changes the webhook writes into a pod at creation: for each
// long-running container matched by name in recs, each recommended resource and each
// field the policy manages (managed), the recommended value when it differs from the
// container's (Quantity comparison), with requests clamped to the limit in effect after
// the patch, the one-unit step-down that keeps a Burstable pod Burstable, and QoS
// preservation by per-container pinning. Run-to-completion init and ephemeral
// containers are never touched.
func Admission(pod *corev1.Pod, recs Recommendations, managed Managed) Result {
	before := qosOf(pod, nil)
	plans := planAdmission(pod, recs, managed, false)
	if before == corev1.PodQOSBurstable && qosOf(pod, changesOf(plans, nil)) == corev1.PodQOSGuaranteed {
		// Some request written equal to its limit would make the pod Guaranteed:
		// write one unit below the limit instead (SPEC §7.5).
		plans = planAdmission(pod, recs, managed, true)
	}
	pinned := pinForQoS(pod, before, plans)

	res := Result{Changes: changesOf(plans, pinned), Annotations: map[string]string{}}
	for _, p := range plans {
		res.Clamps = append(res.Clamps, p.clamps...)
		if pinned[p.changes.Name] {
			res.Pinned = append(res.Pinned, p.changes.Name)
			continue
		}
		for _, w := range p.writes {
			w.annotate(res.Annotations)
		}
	}
	if len(res.Changes) == 0 {
		res.SkipReason = ReasonNoChange
		if len(res.Pinned) > 0 {
			res.SkipReason = ReasonQoSPinned
		}
	}
	return res
}

// containerPlan is what admission would write into one container.
type containerPlan struct {
	changes ContainerChanges
	writes  []write // in the order they were decided, for the annotations
	clamps  []Clamp
}

// write is one value written, for its applied-* (and clamped-*) annotation.
type write struct {
	res   corev1.ResourceName
	field Field
	value resource.Quantity
	// clampedFrom is the pre-clamp request when the written request is a clamp.
	clampedFrom *resource.Quantity
}

// annotate records w: applied-<res>-<field>, and for a request clamped-<res>-request
// when it was clamped (removed otherwise, so the pair always describes the same write).
func (w write) annotate(annotations map[string]string) {
	annotations[v1.AppliedAnnotation(string(w.res), string(w.field))] = w.value.String()
	if w.field != Request {
		return
	}
	if w.clampedFrom != nil {
		annotations[v1.ClampedAnnotation(string(w.res))] = w.clampedFrom.String()
	} else {
		delete(annotations, v1.ClampedAnnotation(string(w.res)))
	}
}

func planAdmission(pod *corev1.Pod, recs Recommendations, managed Managed, stepDown bool) []containerPlan {
	var plans []containerPlan
	for _, ref := range longRunning(pod) {
		rec, ok := recs[ref.name]
		if !ok {
			continue
		}
		p := containerPlan{changes: ref.changes()}
		c := ref.container(pod)
		for _, res := range recommendedResources {
			if r, ok := rec[res]; ok {
				p.plan(c, res, r, managed, stepDown)
			}
		}
		plans = append(plans, p)
	}
	return plans
}

// plan decides the limit, then the request, of one resource of container c.
func (p *containerPlan) plan(c *corev1.Container, res corev1.ResourceName, r ResourceRecommendation, managed Managed, stepDown bool) {
	// The bound is the limit in effect after the patch: the recommended limit when the
	// policy manages it, else the existing limit; no limit ⇒ no clamping.
	bound := limitOf(c, res)
	if managed.Has(res, Limit) && r.Limit != nil {
		bound = r.Limit
		if cur := quantity(c.Resources.Limits, res); cur == nil || cur.Cmp(*r.Limit) != 0 {
			p.set(res, Limit, *r.Limit, nil)
		}
	}

	// The desired request is the recommendation, or the author's request when it sits
	// above the bound (a limit-only policy lowering the limit holds the request at it).
	cur := quantity(c.Resources.Requests, res)
	desired := (*resource.Quantity)(nil)
	switch {
	case managed.Has(res, Request) && r.Request != nil:
		desired = r.Request
	case cur != nil && bound != nil && cur.Cmp(*bound) > 0:
		desired = cur
	default:
		return
	}

	target, clamped := *desired, false
	if bound != nil {
		if desired.Cmp(*bound) > 0 {
			target, clamped = *bound, true
		}
		// Step-down: only for a value actually written equal to the limit.
		changed := cur == nil || cur.Cmp(target) != 0
		if stepDown && resizable(res) && changed && target.Cmp(*bound) == 0 {
			target = fromUnits(res, toUnits(res, *bound)-1)
		}
	}
	if clamped {
		p.clamps = append(p.clamps, Clamp{
			Container: p.changes.Name, Resource: res,
			Recommended: desired.DeepCopy(), Limit: bound.DeepCopy(), Written: target.DeepCopy(),
		})
	}
	if cur == nil || cur.Cmp(target) != 0 {
		var from *resource.Quantity
		if clamped {
			from = desired
		}
		p.set(res, Request, target, from)
	}
}

func (p *containerPlan) set(res corev1.ResourceName, f Field, v resource.Quantity, clampedFrom *resource.Quantity) {
	list := &p.changes.Requests
	if f == Limit {
		list = &p.changes.Limits
	}
	if *list == nil {
		*list = corev1.ResourceList{}
	}
	(*list)[res] = v.DeepCopy()
	w := write{res: res, field: f, value: v.DeepCopy()}
	if clampedFrom != nil {
		from := clampedFrom.DeepCopy()
		w.clampedFrom = &from
	}
	p.writes = append(p.writes, w)
}

// pinForQoS returns the containers whose changes are dropped to keep a Burstable or
// Guaranteed pod in its class (SPEC §7.4). A BestEffort pod carries no class intent.
func pinForQoS(pod *corev1.Pod, before corev1.PodQOSClass, plans []containerPlan) map[string]bool {
	pinned := map[string]bool{}
	if before == corev1.PodQOSBestEffort || qosOf(pod, changesOf(plans, nil)) == before {
		return pinned
	}
	// Test each container's changes alone against the original pod.
	for _, p := range plans {
		if !p.changes.empty() && qosOf(pod, []ContainerChanges{p.changes}) != before {
			pinned[p.changes.Name] = true
		}
	}
	// The rest together still change the class ⇒ leave the whole pod unpatched.
	if qosOf(pod, changesOf(plans, pinned)) != before {
		for _, p := range plans {
			if !p.changes.empty() {
				pinned[p.changes.Name] = true
			}
		}
	}
	return pinned
}

// changesOf returns the non-empty changes of the plans not pinned.
func changesOf(plans []containerPlan, pinned map[string]bool) []ContainerChanges {
	var out []ContainerChanges
	for _, p := range plans {
		if !p.changes.empty() && !pinned[p.changes.Name] {
			out = append(out, p.changes)
		}
	}
	return out
}
