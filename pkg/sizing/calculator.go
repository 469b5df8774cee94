package sizing

import (
	"math/big"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ballastk8s/ballast/pkg/sizing/memfloor"
)

// Stepping says how far one calculation moves a value toward its recommendation.
type Stepping int

const (
	// AtOnce writes the recommendation itself (admission, SPEC §7.3): a value moves
	// whenever it differs from the container's (Quantity comparison).
	AtOnce Stepping = iota
	// Stepped moves a value one resize cycle (SPEC §8.3): only past its drift threshold,
	// by at most maxChangePerCycle of the gap, snapping onto the recommendation when
	// close. Only cpu and memory move; other resources are checked for drift only.
	Stepped
)

// Plan is the one calculator's answer for a pod: per long-running container with
// recommendations, per recommended resource and field, where the value is and where it
// goes. Admission renders it as a JSON patch (Admission, JSONPatch), resize as a
// pods/resize patch (Resize, ResizePatch).
type Plan struct {
	// Containers in processing order: native sidecars, then regular containers, each in
	// spec order. Only containers matched by name in the recommendations are listed.
	Containers []ContainerPlan
	// QoSBefore is the pod's class; QoSAfter its class with every change of the plan
	// written (pinning not applied), as the API server will see it.
	QoSBefore, QoSAfter corev1.PodQOSClass
	// StepDown is true when requests written equal to their limits were written one unit
	// below instead, to keep a Burstable pod Burstable (SPEC §7.5).
	StepDown bool
	// Bounded records every value Params.Bounds capped, clamped or held back, in the
	// order applied (see bound).
	Bounded []BoundNote
	// HeldAll is the bound reason that left the whole pod unchanged, empty otherwise.
	HeldAll string
	// Runtimes are the runtime memory notes (policy spec.runtime other than generic): per
	// container the resolved runtime, its floor and what the floor raised.
	Runtimes []RuntimeNote
	// Pod is the pod-level spec.resources plan (policy podLevel: size, pod with
	// spec.resources); nil otherwise.
	Pod *PodPlan
}

// ContainerPlan is the plan of one container.
type ContainerPlan struct {
	Name string
	// Sidecar is true for a native sidecar (spec.initContainers).
	Sidecar bool
	// Index is the container's position in spec.containers or spec.initContainers.
	Index int
	// Resources are the recommended resources, in the order cpu, memory,
	// ephemeral-storage.
	Resources []ResourcePlan
	// Pinned is true when the container's own changes would change the class of a
	// Burstable or Guaranteed pod, or when the unpinned rest together still would
	// (SPEC §7.4). Admission drops a pinned container's changes; resize instead skips the
	// whole pod when QoSAfter differs from QoSBefore (§8.2 step 5).
	Pinned bool
}

// ResourcePlan is the plan of one resource of a container. The limit is decided first,
// the request is then clamped to the limit in effect after the plan.
type ResourcePlan struct {
	Resource       corev1.ResourceName
	Limit, Request FieldPlan
}

// FieldPlan is where one request or limit is and where the plan puts it, in Units.
type FieldPlan struct {
	// Managed is true when the policy's metrics name this (resource, field).
	Managed bool
	// Current is the container's value; HasCurrent is false when it has none (Current 0).
	Current    Units
	HasCurrent bool
	// Recommended is the profile's recommendation, when the policy manages the field and
	// the profile has one (HasRecommended).
	Recommended    Units
	HasRecommended bool
	// Target is the value in effect after the plan: Current when unchanged. With
	// !HasCurrent and !Changed the field stays absent.
	Target Units
	// Changed is true when the plan writes Target.
	Changed bool
	// Clamped is true for a request held at its limit (SPEC §7.5): PreClamp is the value
	// it would have had (the recommendation, the author's request when only the limit is
	// managed, or the stepped value a lowered limit cuts off), Bound the limit in effect.
	Clamped  bool
	PreClamp Units
	Bound    Units
	// Reason says why a field that has something to do does not move: ReasonNoChange
	// (AtOnce: already at its target), ReasonNoDrift (Stepped: within its threshold),
	// ReasonClampedAtLimit (Stepped: the recommendation drifted but the request is held at
	// its clamp target) or ReasonNotResizable (Stepped: a resource only admission changes
	// drifted). Empty when the field changes or there is nothing to do.
	Reason string
}

// Calculate is the one patch calculator (SPEC §7.3–§7.5, §8.3). For each long-running
// container matched by name in recs and each recommended resource it decides the limit
// (the recommendation when the policy manages it, else the current limit), then the
// request (the recommendation, or the author's request when it sits above that limit),
// clamped to the limit in effect afterwards, moved per stepping, and, when equal requests
// and limits would turn a Burstable pod Guaranteed, written one unit below a limit it
// would equal (cpu and memory; ephemeral-storage clamps exactly). It then records the QoS
// classes and the §7.4 pinning. Run-to-completion init and ephemeral containers are never
// planned; pod is not modified.
func Calculate(pod *corev1.Pod, recs Recommendations, p Params, s Stepping) Plan {
	c := calculator{params: p, stepping: s, thresholds: map[Target]*big.Rat{}, maxChange: p.maxChange()}
	orig := recs
	// Raise memory to the runtime's floor (-Xmx + non-heap, GOMEMLIMIT, old space) first:
	// the allowed range below still caps it, since an admin's maxAllowed and the largest
	// node are hard limits.
	recs, runtimes, resolved := applyFloors(pod, recs, p.Runtime)
	c.runtimes = resolved
	// Trust a profile's values only within the allowed range (policy minAllowed and
	// maxAllowed, the largest node's allocatable).
	recs, capped := capRecommendations(recs, p.Bounds.Allowed)
	before := QoSWith(pod, nil)
	plan := c.plan(pod, recs, false)
	after := QoSWith(pod, plan.Changes())
	if before == corev1.PodQOSBurstable && after == corev1.PodQOSGuaranteed {
		// Some request written equal to its limit would make the pod Guaranteed: write
		// one unit below the limit instead (SPEC §7.5).
		plan = c.plan(pod, recs, true)
		plan.StepDown = true
		after = QoSWith(pod, plan.Changes())
	}
	plan.QoSBefore, plan.QoSAfter = before, after
	plan.Bounded = capped
	// Keep the pod admissible: LimitRanges, pod-level resources, quota headroom.
	c.bound(pod, &plan)
	repin(pod, &plan)
	plan.Runtimes = runtimes
	if p.sizesPodLevel(s) {
		plan.Pod = sizePodLevel(pod, &plan, c.written(pod, &plan))
		if plan.Pod != nil && plan.Pod.Held != "" {
			// The pod level stays as written: plan the containers within it (keep).
			keep := p
			keep.PodLevel = PodLevelKeep
			held := Calculate(pod, orig, keep, s)
			held.Pod = plan.Pod
			return held
		}
	}
	return plan
}

// Changes renders the plan's written values per container (pinned containers included),
// in processing order; containers with nothing to write are left out.
func (p Plan) Changes() []ContainerChanges {
	var out []ContainerChanges
	for i := range p.Containers {
		if ch := p.Containers[i].Changes(); !ch.empty() {
			out = append(out, ch)
		}
	}
	return out
}

// Changes renders the container's written values as Quantities.
func (cp ContainerPlan) Changes() ContainerChanges {
	ch := ContainerChanges{Name: cp.Name, Sidecar: cp.Sidecar, Index: cp.Index}
	for _, rp := range cp.Resources {
		if rp.Limit.Changed {
			ch.Limits = merged(ch.Limits, corev1.ResourceList{rp.Resource: rp.Limit.Target.Quantity(rp.Resource)})
		}
		if rp.Request.Changed {
			ch.Requests = merged(ch.Requests, corev1.ResourceList{rp.Resource: rp.Request.Target.Quantity(rp.Resource)})
		}
	}
	return ch
}

// calculator holds what one Calculate call shares.
type calculator struct {
	params     Params
	stepping   Stepping
	thresholds map[Target]*big.Rat // memoized Params.threshold
	maxChange  *big.Rat
	runtimes   map[string]memfloor.Runtime // resolved runtime per container (applyFloors)
}

func (c *calculator) threshold(res corev1.ResourceName, f Field) *big.Rat {
	t := Target{res, f}
	if r, ok := c.thresholds[t]; ok {
		return r
	}
	r := c.params.threshold(res, f)
	c.thresholds[t] = r
	return r
}

func (c *calculator) plan(pod *corev1.Pod, recs Recommendations, stepDown bool) Plan {
	var plan Plan
	for _, ref := range LongRunning(&pod.Spec) {
		rec, ok := recs[ref.Name]
		if !ok {
			continue
		}
		ctr := ref.Container(&pod.Spec)
		cp := ContainerPlan{Name: ref.Name, Sidecar: ref.Sidecar, Index: ref.Index}
		for _, res := range recommendedResources {
			r, ok := rec[res]
			switch {
			case !ok:
			case c.stepping == Stepped && !resizable(res):
				cp.Resources = append(cp.Resources, c.driftOnly(ctr, res, r))
			default:
				cp.Resources = append(cp.Resources, c.resource(ctr, res, r, stepDown))
			}
		}
		plan.Containers = append(plan.Containers, cp)
	}
	return plan
}

// current reads one field of a container: its value in Units and its Quantity (nil when
// absent).
func current(list corev1.ResourceList, res corev1.ResourceName) (FieldPlan, *resource.Quantity) {
	q, ok := list[res]
	if !ok {
		return FieldPlan{}, nil
	}
	u := UnitsOf(res, q)
	return FieldPlan{Current: u, HasCurrent: true, Target: u}, &q
}

// resource plans the limit, then the request, of one resource.
func (c *calculator) resource(ctr *corev1.Container, res corev1.ResourceName, r ResourceRecommendation, stepDown bool) ResourcePlan {
	rp := ResourcePlan{Resource: res}
	lim, limQ := current(ctr.Resources.Limits, res)
	req, reqQ := current(ctr.Resources.Requests, res)
	lim.Managed, req.Managed = c.params.Managed.Has(res, Limit), c.params.Managed.Has(res, Request)

	// The limit in effect after the plan: the recommendation when the policy manages the
	// limit (moved per stepping), else the existing limit. Ballast never raises a limit to
	// make room for a request.
	if lim.Managed && r.HasLimit {
		lim.Recommended, lim.HasRecommended = r.Limit, true
		c.move(&lim, limQ, res, Limit, r.Limit)
		if c.holdShrink(ctr.Name, res) && lim.Changed && (lim.Target < lim.Current || lim.Current == 0) {
			// A jvm keeps the heap it sized at start: shrink at restart only. Adding a
			// limit where there was none is a shrink from unbounded.
			lim.Target, lim.Changed, lim.Reason = lim.Current, false, ReasonRestartOnly
		}
	}
	// No limit (absent or zero) ⇒ no clamping.
	bound, hasBound := lim.Target, lim.Target > 0

	// The desired request: the recommendation, or the author's request when it sits above
	// the bound (a limit-only policy lowering the limit holds the request at it).
	desired := req.Current
	switch {
	case req.Managed && r.HasRequest:
		req.Recommended, req.HasRecommended = r.Request, true
		desired = r.Request
	case req.HasCurrent && hasBound && req.Current > bound:
	default:
		rp.Limit, rp.Request = lim, req
		return rp
	}
	target := desired
	if hasBound && desired > bound {
		target, req.Clamped, req.PreClamp, req.Bound = bound, true, desired, bound
	}
	c.move(&req, reqQ, res, Request, target)
	// The request is bounded by the limit in effect even when its own move fell short
	// (Stepped: the limit stepped below a request that did not drift enough to move).
	if hasBound && req.Target > bound {
		if !req.Clamped {
			req.Clamped, req.PreClamp, req.Bound = true, req.Target, bound
		}
		req.Target = bound
		req.Changed = c.differs(req, reqQ, res)
	}
	// Step-down: only for a value actually written equal to the limit.
	if stepDown && resizable(res) && hasBound && req.Changed && req.Target == bound {
		req.Target = bound - 1
		req.Changed = c.differs(req, reqQ, res)
	}
	if c.holdShrink(ctr.Name, res) && req.Changed && req.HasCurrent && req.Target < req.Current {
		req.Target, req.Changed, req.Clamped = req.Current, false, false
		req.Reason = ReasonRestartOnly
	}
	switch {
	case req.Changed:
		req.Reason = ""
	case req.Reason == ReasonRestartOnly:
	case c.stepping == Stepped && req.Clamped && req.HasRecommended &&
		drifts(int64(req.Current), int64(req.Recommended), c.threshold(res, Request)):
		req.Reason = ReasonClampedAtLimit
	}
	rp.Limit, rp.Request = lim, req
	return rp
}

// move sets f.Target toward target per stepping and records whether it changed.
func (c *calculator) move(f *FieldPlan, cur *resource.Quantity, res corev1.ResourceName, field Field, target Units) {
	switch c.stepping {
	case Stepped:
		t, moved := step(int64(f.Current), int64(target), c.threshold(res, field), c.maxChange)
		if moved {
			if res != corev1.ResourceCPU {
				t = stepMiB(int64(f.Current), t, int64(target))
			}
			f.Target = Units(t)
		}
	default:
		f.Target = target
	}
	f.Changed = c.differs(*f, cur, res)
	f.Reason = ""
	if !f.Changed {
		f.Reason = ReasonNoChange
		if c.stepping == Stepped {
			f.Reason = ReasonNoDrift
		}
	}
}

// differs reports whether f.Target is a new value: for AtOnce by Quantity comparison
// with the container's value (cur, nil when absent), for Stepped in Units (an absent
// value counts as 0).
func (c *calculator) differs(f FieldPlan, cur *resource.Quantity, res corev1.ResourceName) bool {
	if c.stepping == Stepped {
		return f.Target != f.Current
	}
	if cur == nil {
		return true
	}
	return cur.Cmp(f.Target.Quantity(res)) != 0
}

// driftOnly checks a resource resize cannot change (ephemeral-storage) for drift, to
// report ReasonNotResizable; nothing moves.
func (c *calculator) driftOnly(ctr *corev1.Container, res corev1.ResourceName, r ResourceRecommendation) ResourcePlan {
	rp := ResourcePlan{Resource: res}
	lim, _ := current(ctr.Resources.Limits, res)
	req, _ := current(ctr.Resources.Requests, res)
	lim.Managed, req.Managed = c.params.Managed.Has(res, Limit), c.params.Managed.Has(res, Request)
	check := func(f *FieldPlan, field Field, rec Units, has bool) {
		if !f.Managed || !has {
			return
		}
		f.Recommended, f.HasRecommended = rec, true
		f.Reason = ReasonNoDrift
		if drifts(int64(f.Current), int64(rec), c.threshold(res, field)) {
			f.Reason = ReasonNotResizable
		}
	}
	check(&lim, Limit, r.Limit, r.HasLimit)
	check(&req, Request, r.Request, r.HasRequest)
	rp.Limit, rp.Request = lim, req
	return rp
}

// pinForQoS marks the containers whose changes are dropped to keep a Burstable or
// Guaranteed pod in its class (SPEC §7.4). A BestEffort pod carries no class intent.
func pinForQoS(pod *corev1.Pod, plan *Plan) {
	if plan.QoSBefore == corev1.PodQOSBestEffort || plan.QoSAfter == plan.QoSBefore {
		return
	}
	// Test each container's changes alone against the original pod.
	for i := range plan.Containers {
		cp := &plan.Containers[i]
		if ch := cp.Changes(); !ch.empty() && QoSWith(pod, []ContainerChanges{ch}) != plan.QoSBefore {
			cp.Pinned = true
		}
	}
	// The rest together still change the class ⇒ leave the whole pod unpatched.
	if QoSWith(pod, plan.unpinnedChanges()) != plan.QoSBefore {
		for i := range plan.Containers {
			if !plan.Containers[i].Changes().empty() {
				plan.Containers[i].Pinned = true
			}
		}
	}
}

// unpinnedChanges are the non-empty changes of the containers not pinned.
func (p Plan) unpinnedChanges() []ContainerChanges {
	var out []ContainerChanges
	for _, cp := range p.Containers {
		if ch := cp.Changes(); !cp.Pinned && !ch.empty() {
			out = append(out, ch)
		}
	}
	return out
}
