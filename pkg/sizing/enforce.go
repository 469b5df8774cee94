package sizing

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// bound applies Params.Bounds to a plan after the request ≤ limit clamp: it clamps every
// changed value into the range of the namespace's Container-type LimitRanges (min, max,
// then maxLimitRequestRatio by raising a request or lowering a limit), then holds back
// (leaves as the author wrote them) the values behind any admission check the written
// changes would still fail, one (container, resource) at a time, until they pass; when
// nothing is left to hold back the whole pod is left unchanged. The original pod passing
// the API server's checks is therefore enough for the sized one to pass them too.
func (c *calculator) bound(pod *corev1.Pod, plan *Plan) {
	b := c.params.Bounds
	if len(b.LimitRanges) == 0 && len(b.Quotas) == 0 && pod.Spec.Resources == nil {
		return
	}
	c.clampLimitRanges(plan)
	for round := 0; ; round++ {
		vs := violations(c.checked(pod), c.written(pod, plan), b)
		if len(vs) == 0 {
			return
		}
		if round > 3*len(plan.Containers)*len(recommendedResources) || !holdBack(plan, vs[0]) {
			holdAll(plan, vs[0])
			return
		}
	}
}

// checked is the pod the admission checks run against: with podLevel size the pod-level
// spec.resources are rewritten from the containers afterwards (sizePodLevel), so they do
// not hold container changes back.
func (c *calculator) checked(pod *corev1.Pod) *corev1.Pod {
	if !c.params.sizesPodLevel(c.stepping) || pod.Spec.Resources == nil {
		return pod
	}
	out := pod.DeepCopy()
	out.Spec.Resources = nil
	return out
}

// written are the changes the renderer would write: for admission the unpinned ones
// (QoS pinning recomputed on the current plan), for resize all of them.
func (c *calculator) written(pod *corev1.Pod, plan *Plan) []ContainerChanges {
	if c.stepping == Stepped {
		return plan.Changes()
	}
	repin(pod, plan)
	return plan.unpinnedChanges()
}

// repin recomputes QoSAfter and the §7.4 pinning of plan.
func repin(pod *corev1.Pod, plan *Plan) {
	for i := range plan.Containers {
		plan.Containers[i].Pinned = false
	}
	plan.QoSAfter = QoSWith(pod, plan.Changes())
	pinForQoS(pod, plan)
}

// limitRange is the tightest Container-type bound of one resource over every LimitRange.
type limitRange struct {
	min, max, ratio          resource.Quantity
	hasMin, hasMax, hasRatio bool
	minWhy, maxWhy, ratioWhy string
}

func containerLimitRanges(lrs []corev1.LimitRange) map[corev1.ResourceName]*limitRange {
	out := map[corev1.ResourceName]*limitRange{}
	get := func(res corev1.ResourceName) *limitRange {
		if out[res] == nil {
			out[res] = &limitRange{}
		}
		return out[res]
	}
	for _, lr := range lrs {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			why := func(what string, q resource.Quantity) string {
				return fmt.Sprintf("LimitRange %s Container: %s %s", lr.Name, what, q.String())
			}
			for res, q := range item.Min {
				if l := get(res); !l.hasMin || q.Cmp(l.min) > 0 {
					l.min, l.hasMin, l.minWhy = q.DeepCopy(), true, why("min", q)
				}
			}
			for res, q := range item.Max {
				if l := get(res); !l.hasMax || q.Cmp(l.max) < 0 {
					l.max, l.hasMax, l.maxWhy = q.DeepCopy(), true, why("max", q)
				}
			}
			for res, q := range item.MaxLimitRequestRatio {
				if l := get(res); !l.hasRatio || q.Cmp(l.ratio) < 0 {
					l.ratio, l.hasRatio, l.ratioWhy = q.DeepCopy(), true, why("maxLimitRequestRatio", q)
				}
			}
		}
	}
	return out
}

// clampLimitRanges moves changed values into the Container-type LimitRange ranges.
func (c *calculator) clampLimitRanges(plan *Plan) {
	ranges := containerLimitRanges(c.params.Bounds.LimitRanges)
	if len(ranges) == 0 {
		return
	}
	for ci := range plan.Containers {
		cp := &plan.Containers[ci]
		for ri := range cp.Resources {
			rp := &cp.Resources[ri]
			if lr := ranges[rp.Resource]; lr != nil && (rp.Limit.Changed || rp.Request.Changed) {
				plan.Bounded = append(plan.Bounded, clampResource(cp.Name, rp, lr)...)
			}
		}
	}
}

// clampResource clamps one resource's changed fields: limit into [min, max]; request into
// [min, max] and under the limit in effect; then the ratio.
func clampResource(container string, rp *ResourcePlan, lr *limitRange) []BoundNote {
	res := rp.Resource
	var notes []BoundNote
	set := func(f *FieldPlan, field Field, to Units, why string) {
		notes = append(notes, BoundNote{Container: container, Resource: res, Field: field,
			Reason: ReasonLimitRange, From: f.Target, To: to, Why: why})
		f.Target = to
		f.Changed = !f.HasCurrent || f.Target != f.Current
	}
	minU, maxU := ceilUnits(res, lr.min), floorUnits(res, lr.max)
	into := func(f *FieldPlan, field Field) {
		switch {
		case !f.Changed:
		case lr.hasMax && f.Target > maxU:
			set(f, field, maxU, lr.maxWhy)
		case lr.hasMin && f.Target < minU:
			set(f, field, minU, lr.minWhy)
		}
	}
	lim, req := &rp.Limit, &rp.Request
	into(lim, Limit)
	into(req, Request)
	hasLim := (lim.HasCurrent || lim.Changed) && lim.Target > 0
	hasReq := req.HasCurrent || req.Changed
	if hasLim && hasReq && req.Target > lim.Target {
		set(req, Request, lim.Target, "request above the limit in effect")
	}
	if !lr.hasRatio || !hasLim || !hasReq || req.Target <= 0 {
		return notes
	}
	exceeded := func(r, l Units) bool { return ratioExceeded(r.Quantity(res), l.Quantity(res), lr.ratio) }
	if !exceeded(req.Target, lim.Target) {
		return notes
	}
	ratioMilli := lr.ratio.MilliValue()
	switch {
	case req.Changed && ratioMilli > 0:
		// The smallest request the ratio allows under this limit.
		need := Units((int64(lim.Target)*1000 + ratioMilli - 1) / ratioMilli)
		for need < lim.Target && exceeded(need, lim.Target) {
			need++
		}
		if need > req.Target {
			set(req, Request, need, lr.ratioWhy)
		}
	case lim.Changed:
		// The largest limit the ratio allows over this request.
		cap := Units(int64(req.Target) * ratioMilli / 1000)
		for cap > req.Target && exceeded(req.Target, cap) {
			cap--
		}
		if cap < lim.Target && cap >= req.Target {
			set(lim, Limit, cap, lr.ratioWhy)
		}
	}
	return notes
}

// ceilUnits and floorUnits convert a bound to Units, rounding toward the inside of the
// range (a min up, a max down).
func ceilUnits(res corev1.ResourceName, q resource.Quantity) Units { return UnitsOf(res, q) }

func floorUnits(res corev1.ResourceName, q resource.Quantity) Units {
	u := UnitsOf(res, q)
	if uq := u.Quantity(res); uq.Cmp(q) > 0 {
		u--
	}
	return u
}

// holdBack leaves one (container, resource) as the author wrote it to clear v: the
// container v names, or for a pod-level check the last container (processing order)
// whose value moved the way v blames (raised for a max or quota, lowered for a min),
// else the last whose value moved at all. It reports false when nothing is left to hold.
func holdBack(plan *Plan, v violation) bool {
	pick := -1
	for pass := 0; pass < 2 && pick < 0; pass++ {
		for i := len(plan.Containers) - 1; i >= 0 && pick < 0; i-- {
			cp := &plan.Containers[i]
			if v.container != "" && cp.Name != v.container {
				continue
			}
			for j := range cp.Resources {
				rp := &cp.Resources[j]
				if rp.Resource == v.resource && moved(rp, v.raise, pass == 1) {
					pick = i
					plan.Bounded = append(plan.Bounded, hold(cp.Name, rp, v)...)
					break
				}
			}
		}
	}
	return pick >= 0
}

// moved reports whether rp changes a field, raising it (raise) or lowering it, or in
// either direction when any is true.
func moved(rp *ResourcePlan, raise, any bool) bool {
	for _, f := range [...]*FieldPlan{&rp.Request, &rp.Limit} {
		if !f.Changed {
			continue
		}
		up := !f.HasCurrent || f.Target > f.Current
		if any || up == raise {
			return true
		}
	}
	return false
}

// hold reverts both fields of rp to their current values, noting each change dropped.
func hold(container string, rp *ResourcePlan, v violation) []BoundNote {
	var notes []BoundNote
	for _, x := range [...]struct {
		f     *FieldPlan
		field Field
	}{{&rp.Request, Request}, {&rp.Limit, Limit}} {
		f := x.f
		if !f.Changed {
			continue
		}
		notes = append(notes, BoundNote{Container: container, Resource: rp.Resource, Field: x.field,
			Reason: v.reason, From: f.Target, To: f.Current, Held: true, Why: v.why})
		f.Target, f.Changed, f.Clamped, f.Reason = f.Current, false, false, v.reason
	}
	return notes
}

// holdAll leaves the whole pod unchanged because of v.
func holdAll(plan *Plan, v violation) {
	for i := range plan.Containers {
		cp := &plan.Containers[i]
		for j := range cp.Resources {
			plan.Bounded = append(plan.Bounded, hold(cp.Name, &cp.Resources[j], v)...)
		}
	}
	plan.HeldAll = v.reason
}
