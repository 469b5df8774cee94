package sizing

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// violation is one admission check the written changes would fail.
type violation struct {
	container string // empty for a pod-level check
	resource  corev1.ResourceName
	reason    string
	why       string
	// raise is true when a raised value causes it (a max, a quota, the pod-level
	// request), false when a lowered one does (a min, a ratio).
	raise bool
}

// violations lists the checks the API server runs on a created pod (the LimitRanger's
// validation, pod-level resource consistency, ResourceQuota) that pod with changes
// written fails and pod itself passes; a check whose inputs the changes do not touch
// is not repeated. Aggregates follow the API server's formula (regular containers and
// native sidecars add up; a run-to-completion init container counts with the sidecars
// started before it; the larger wins).
func violations(pod *corev1.Pod, changes []ContainerChanges, b Bounds) []violation {
	if len(changes) == 0 || (len(b.LimitRanges) == 0 && len(b.Quotas) == 0 && pod.Spec.Resources == nil) {
		return nil
	}
	before, after := WithChanges(pod, nil), WithChanges(pod, changes)
	var out []violation
	// Container-type LimitRange items, on the containers the changes touch.
	for _, ch := range changes {
		c := refOf(ch).Container(&after.Spec)
		if c == nil {
			continue
		}
		touched := map[corev1.ResourceName]bool{}
		for res := range ch.Requests {
			touched[res] = true
		}
		for res := range ch.Limits {
			touched[res] = true
		}
		for _, lr := range b.LimitRanges {
			for _, item := range lr.Spec.Limits {
				if item.Type != corev1.LimitTypeContainer {
					continue
				}
				for _, v := range limitRangeChecks(lr.Name, item, c.Resources.Requests, c.Resources.Limits, touched) {
					v.container = ch.Name
					out = append(out, v)
				}
			}
		}
	}
	reqBefore, reqAfter := aggregate(before, requestsOf), aggregate(after, requestsOf)
	limBefore, limAfter := aggregate(before, limitsOf), aggregate(after, limitsOf)
	changed := map[corev1.ResourceName]bool{}
	for _, m := range [...][2]corev1.ResourceList{{reqBefore, reqAfter}, {limBefore, limAfter}} {
		for res, q := range m[1] {
			if old, ok := m[0][res]; !ok || old.Cmp(q) != 0 {
				changed[res] = true
			}
		}
	}
	// Pod-type LimitRange items, on the aggregates.
	for _, lr := range b.LimitRanges {
		for _, item := range lr.Spec.Limits {
			if item.Type == corev1.LimitTypePod {
				out = append(out, limitRangeChecks(lr.Name, item, reqAfter, limAfter, changed)...)
			}
		}
	}
	out = append(out, podResourceChecks(pod, after, reqAfter, changed)...)
	out = append(out, quotaChecks(b.Quotas, reqBefore, reqAfter, limBefore, limAfter)...)
	return out
}

// limitRangeChecks runs min, max and maxLimitRequestRatio of one LimitRange item on the
// resources in only, the way the LimitRanger compares (milli-values when they fit).
func limitRangeChecks(name string, item corev1.LimitRangeItem, req, lim corev1.ResourceList, only map[corev1.ResourceName]bool) []violation {
	var out []violation
	add := func(res corev1.ResourceName, raise bool, format string, args ...any) {
		out = append(out, violation{resource: res, reason: ReasonLimitRange, raise: raise,
			why: fmt.Sprintf("LimitRange %s %s: ", name, item.Type) + fmt.Sprintf(format, args...)})
	}
	for res, enforced := range item.Min {
		if !only[res] {
			continue
		}
		r, hasR := req[res]
		l, hasL := lim[res]
		switch {
		case !hasR || cmpEnforced(r, enforced) < 0:
			add(res, false, "min %s, request %s", enforced.String(), r.String())
		case hasL && cmpEnforced(l, enforced) < 0:
			add(res, false, "min %s, limit %s", enforced.String(), l.String())
		}
	}
	for res, enforced := range item.Max {
		if !only[res] {
			continue
		}
		r, hasR := req[res]
		l, hasL := lim[res]
		switch {
		case !hasL || cmpEnforced(l, enforced) > 0:
			add(res, true, "max %s, limit %s", enforced.String(), l.String())
		case hasR && cmpEnforced(r, enforced) > 0:
			add(res, true, "max %s, request %s", enforced.String(), r.String())
		}
	}
	for res, enforced := range item.MaxLimitRequestRatio {
		if !only[res] {
			continue
		}
		r, hasR := req[res]
		l, hasL := lim[res]
		if !hasR || !hasL || r.IsZero() || l.IsZero() || ratioExceeded(r, l, enforced) {
			add(res, false, "maxLimitRequestRatio %s, request %s, limit %s", enforced.String(), r.String(), l.String())
		}
	}
	return out
}

// cmpEnforced compares an observed value with a LimitRange bound at the LimitRanger's
// common precision.
func cmpEnforced(observed, enforced resource.Quantity) int {
	o, e := observed.Value(), enforced.Value()
	if o <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		o, e = observed.MilliValue(), enforced.MilliValue()
	}
	switch {
	case o < e:
		return -1
	case o > e:
		return 1
	}
	return 0
}

// ratioExceeded is the LimitRanger's limit/request ratio test, floating point included
// (its rounding decides at the boundary, so it is mirrored, not improved on).
func ratioExceeded(req, lim, enforced resource.Quantity) bool {
	r, l := req.Value(), lim.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && enforced.Value() <= resource.MaxMilliValue {
		r, l = req.MilliValue(), lim.MilliValue()
	}
	if r == 0 {
		return true
	}
	observed := float64(l) / float64(r)
	ceiling := float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed *= 1000
		ceiling = float64(enforced.MilliValue())
	}
	return observed > ceiling
}

// podResourceChecks: pod-level spec.resources must hold the containers' aggregate
// requests, and no container limit may exceed the pod's limit.
func podResourceChecks(pod, after *corev1.Pod, reqAfter corev1.ResourceList, changed map[corev1.ResourceName]bool) []violation {
	pr := pod.Spec.Resources
	if pr == nil {
		return nil
	}
	var out []violation
	add := func(res corev1.ResourceName, format string, args ...any) {
		out = append(out, violation{resource: res, reason: ReasonPodResources, raise: true, why: fmt.Sprintf(format, args...)})
	}
	for res, agg := range reqAfter {
		if !changed[res] {
			continue
		}
		if q, ok := pr.Requests[res]; ok && agg.Cmp(q) > 0 {
			add(res, "pod request %s, aggregate container requests %s", q.String(), agg.String())
		} else if q, ok := pr.Limits[res]; ok && agg.Cmp(q) > 0 {
			add(res, "pod limit %s, aggregate container requests %s", q.String(), agg.String())
		}
	}
	for _, c := range allContainers(after) {
		for res, l := range c.Resources.Limits {
			if q, ok := pr.Limits[res]; ok && changed[res] && l.Cmp(q) > 0 {
				add(res, "pod limit %s, container %s limit %s", q.String(), c.Name, l.String())
			}
		}
	}
	return out
}

// quotaKeys maps a quota's tracked names to the field and resource they count.
var quotaKeys = map[corev1.ResourceName]struct {
	limit bool
	res   corev1.ResourceName
}{
	corev1.ResourceCPU: {false, corev1.ResourceCPU}, corev1.ResourceRequestsCPU: {false, corev1.ResourceCPU},
	corev1.ResourceMemory: {false, corev1.ResourceMemory}, corev1.ResourceRequestsMemory: {false, corev1.ResourceMemory},
	corev1.ResourceEphemeralStorage: {false, corev1.ResourceEphemeralStorage}, corev1.ResourceRequestsEphemeralStorage: {false, corev1.ResourceEphemeralStorage},
	corev1.ResourceLimitsCPU: {true, corev1.ResourceCPU}, corev1.ResourceLimitsMemory: {true, corev1.ResourceMemory},
	corev1.ResourceLimitsEphemeralStorage: {true, corev1.ResourceEphemeralStorage},
}

// quotaChecks: a raise of an aggregate a quota tracks must fit its headroom (hard − used);
// an aggregate that does not grow needs no headroom the original did not.
func quotaChecks(quotas []corev1.ResourceQuota, reqBefore, reqAfter, limBefore, limAfter corev1.ResourceList) []violation {
	var out []violation
	for _, q := range quotas {
		for key, hard := range q.Status.Hard {
			k, ok := quotaKeys[key]
			if !ok {
				continue
			}
			before, after := reqBefore, reqAfter
			if k.limit {
				before, after = limBefore, limAfter
			}
			newQ, has := after[k.res]
			if !has {
				continue
			}
			if oldQ, ok := before[k.res]; ok && newQ.Cmp(oldQ) <= 0 {
				continue
			}
			used := q.Status.Used[key]
			need := used.DeepCopy()
			need.Add(newQ)
			if need.Cmp(hard) > 0 {
				out = append(out, violation{resource: k.res, reason: ReasonQuota, raise: true,
					why: fmt.Sprintf("ResourceQuota %s %s: hard %s, used %s, pod %s", q.Name, key, hard.String(), used.String(), newQ.String())})
			}
		}
	}
	return out
}

func requestsOf(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }
func limitsOf(c *corev1.Container) corev1.ResourceList   { return c.Resources.Limits }

// aggregate is the pod's total of one field the way the API server computes it for the
// LimitRanger, quota and pod-level checks.
func aggregate(pod *corev1.Pod, field func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addList(total, field(&pod.Spec.Containers[i]))
	}
	sidecars, inits := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if IsSidecar(c) {
			addList(total, field(c))
			addList(sidecars, field(c))
			maxList(inits, sidecars)
			continue
		}
		tmp := corev1.ResourceList{}
		addList(tmp, field(c))
		addList(tmp, sidecars)
		maxList(inits, tmp)
	}
	maxList(total, inits)
	return total
}

func addList(into, add corev1.ResourceList) {
	for res, q := range add {
		cur, ok := into[res]
		if !ok {
			into[res] = q.DeepCopy()
			continue
		}
		cur.Add(q)
		into[res] = cur
	}
}

func maxList(into, other corev1.ResourceList) {
	for res, q := range other {
		if cur, ok := into[res]; !ok || q.Cmp(cur) > 0 {
			into[res] = q.DeepCopy()
		}
	}
}

func allContainers(pod *corev1.Pod) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}
