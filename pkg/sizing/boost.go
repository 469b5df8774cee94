package sizing

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ballastk8s/ballast/pkg/policy"
)

// Startup boost outcomes (policy behaviors.startupBoost). They are log keys and the
// reason of the boost skip metric; explain shows them.
const (
	// BoostApplied: at least one container's cpu was raised.
	BoostApplied = "boosted"
	// BoostCapped: the boost was applied but lowered to fit the largest node's allocatable
	// cpu (the pod's total request) or the bounds (maxAllowed, LimitRange, quota).
	BoostCapped = "boost_capped"
	// BoostNoRoom: the un-boosted pod already takes the largest node's allocatable cpu.
	BoostNoRoom = "boost_no_room"
	// BoostNoRequest: no long-running container has a cpu request to raise (a BestEffort
	// pod stays BestEffort).
	BoostNoRequest = "boost_no_cpu_request"
	// BoostHeld: the bounds or the QoS class held every raise back.
	BoostHeld = "boost_held"
)

// BoostInput is what StartupBoost needs: the pod as admitted, the normal admission
// result, the policy's boost, the calculator's parameters with the bounds of the pod's
// namespace (Objects.Params), and the largest node's allocatable cpu (HasNodeCPU false
// when no node is known: then only the per-value bounds cap the boost).
type BoostInput struct {
	Pod        *corev1.Pod
	Sized      Result
	Boost      policy.Boost
	Params     Params
	NodeCPU    Units
	HasNodeCPU bool
}

// BoostDecision is StartupBoost's answer. Result is Sized with the boosted cpu values
// merged into its changes (the applied-* annotations keep describing the sized,
// un-boosted values); Record is what the startup-boost annotation stores, nil when
// nothing was boosted.
type BoostDecision struct {
	Result  Result
	Outcome string
	// Message says, for people, what the boost did or why it did nothing.
	Message string
	Record  *BoostRecord
}

// BoostRecord is the value of the startup-boost annotation: the un-boosted cpu of each
// boosted container (the values the un-boost resizes back to), the boosted values, how
// long the pod must be Ready first, and, once taken back, when.
type BoostRecord struct {
	ReadyFor   string                    `json:"readyFor"`
	Containers map[string]BoostContainer `json:"containers"`
	// Ended is the RFC 3339 time the boost was taken back (or given up); empty while active.
	Ended string `json:"ended,omitempty"`
}

// BoostContainer is one container's cpu before and during the boost. Limits are empty
// when the container has no cpu limit.
type BoostContainer struct {
	Request        string `json:"request"`
	Limit          string `json:"limit,omitempty"`
	BoostedRequest string `json:"boostedRequest"`
	BoostedLimit   string `json:"boostedLimit,omitempty"`
}

// MaxBoostRecordLen bounds the annotation ParseBoostRecord reads.
const MaxBoostRecordLen = 16 << 10

// Encode renders the record as the annotation value.
func (r BoostRecord) Encode() string {
	b, _ := json.Marshal(r) // strings and a map of strings: cannot fail
	return string(b)
}

// ParseBoostRecord reads a startup-boost annotation. Every quantity must parse and
// readyFor must be a duration > 0, so the un-boost never writes a value it cannot read.
func ParseBoostRecord(s string) (BoostRecord, time.Duration, error) {
	var r BoostRecord
	if len(s) > MaxBoostRecordLen {
		return r, 0, fmt.Errorf("startup-boost annotation: longer than %d bytes", MaxBoostRecordLen)
	}
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return BoostRecord{}, 0, fmt.Errorf("startup-boost annotation: %w", err)
	}
	d, err := policy.ParsePositiveDuration(r.ReadyFor)
	if err != nil {
		return BoostRecord{}, 0, fmt.Errorf("startup-boost annotation: readyFor %q: %w", r.ReadyFor, err)
	}
	if len(r.Containers) == 0 {
		return BoostRecord{}, 0, fmt.Errorf("startup-boost annotation: no containers")
	}
	for name, c := range r.Containers {
		for _, q := range []struct{ field, v string }{{"request", c.Request}, {"boostedRequest", c.BoostedRequest}} {
			if _, err := parsePositive(q.v); err != nil {
				return BoostRecord{}, 0, fmt.Errorf("startup-boost annotation: container %q %s %q: %w", name, q.field, q.v, err)
			}
		}
		if (c.Limit == "") != (c.BoostedLimit == "") {
			return BoostRecord{}, 0, fmt.Errorf("startup-boost annotation: container %q: limit and boostedLimit must both be set or both be blank", name)
		}
		for _, q := range []struct{ field, v string }{{"limit", c.Limit}, {"boostedLimit", c.BoostedLimit}} {
			if q.v == "" {
				continue
			}
			if _, err := parsePositive(q.v); err != nil {
				return BoostRecord{}, 0, fmt.Errorf("startup-boost annotation: container %q %s %q: %w", name, q.field, q.v, err)
			}
		}
	}
	if r.Ended != "" {
		if _, err := time.Parse(time.RFC3339, r.Ended); err != nil {
			return BoostRecord{}, 0, fmt.Errorf("startup-boost annotation: ended %q: %w", r.Ended, err)
		}
	}
	return r, d, nil
}

func parsePositive(s string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, err
	}
	if q.Sign() <= 0 {
		return q, fmt.Errorf("must be > 0")
	}
	return q, nil
}

// StartupBoost raises the cpu of a sized pod for its start (policy
// behaviors.startupBoost). For each long-running container with a cpu request, the
// request is multiplied by the factor (or raised to the absolute value) and a cpu limit,
// when the container has one, moves with it: by the same factor, or to at least the
// boosted request; so request ≤ limit holds and a Guaranteed pod (request = limit) stays
// Guaranteed. A container without a cpu request is left alone (BestEffort stays
// BestEffort).
//
// "Never when the node cannot take it": at admission the node is not known, so the pod's
// total cpu request after the boost is kept within the largest node's allocatable cpu
// (the same cap every sized value respects): when it would exceed it, every container's
// extra is scaled down by the same ratio; when the un-boosted pod already takes it all,
// nothing is boosted. The boosted values then pass through the one calculator with the
// namespace's bounds (policy maxAllowed, LimitRanges, quota headroom, pod-level
// resources) and its QoS pinning, so a boosted pod is admitted whenever the un-boosted
// one would have been.
func StartupBoost(in BoostInput) BoostDecision {
	out := BoostDecision{Result: in.Sized}
	if in.Sized.Pod != nil {
		// The pod-level values were just rewritten from the un-boosted containers (policy
		// podLevel: size); a boost above them would make the pod invalid, and raising them
		// too would leave the un-boost a pod-level resize the node may not support.
		out.Outcome, out.Message = BoostHeld, "pod-level resources are sized from the containers; no boost on top"
		return out
	}
	base := WithChanges(in.Pod, in.Sized.Changes)
	type want struct {
		name               string
		req, lim           Units
		hasLim             bool
		boostReq, boostLim Units
	}
	var wants []want
	var total, extra Units
	for _, ref := range LongRunning(&base.Spec) {
		c := ref.Container(&base.Spec)
		q := nonZero(c.Resources.Requests, corev1.ResourceCPU)
		if q == nil || RestartsOnResize(c, corev1.ResourceCPU) {
			// A container whose cpu resizePolicy is RestartContainer would be restarted
			// by the un-boost: a disruption the boost must not buy.
			continue
		}
		w := want{name: c.Name, req: UnitsOf(corev1.ResourceCPU, *q)}
		total += w.req
		if l := limitOf(c, corev1.ResourceCPU); l != nil {
			w.lim, w.hasLim = UnitsOf(corev1.ResourceCPU, *l), true
		}
		if in.Boost.Factor.Sign() > 0 {
			w.boostReq = Units(in.Boost.Factor.MulTrunc(int64(w.req)))
			w.boostLim = Units(in.Boost.Factor.MulTrunc(int64(w.lim)))
		} else {
			w.boostReq = max(w.req, Units(in.Boost.MilliCPU))
			w.boostLim = max(w.lim, w.boostReq)
		}
		if w.boostReq <= w.req {
			continue
		}
		extra += w.boostReq - w.req
		wants = append(wants, w)
	}
	if len(wants) == 0 {
		out.Outcome, out.Message = BoostNoRequest, "no container has a cpu request below the boost"
		return out
	}
	capped := false
	if in.HasNodeCPU && total+extra > in.NodeCPU {
		room := in.NodeCPU - total
		if room <= 0 {
			out.Outcome = BoostNoRoom
			out.Message = fmt.Sprintf("the pod's cpu request %s already takes the largest node's allocatable %s",
				total.String(corev1.ResourceCPU), in.NodeCPU.String(corev1.ResourceCPU))
			return out
		}
		for i := range wants {
			w := &wants[i]
			w.boostReq = w.req + scale(w.boostReq-w.req, room, extra)
			if w.hasLim {
				w.boostLim = w.lim + scale(w.boostLim-w.lim, room, extra)
			}
		}
		capped = true
	}
	recs := Recommendations{}
	for _, w := range wants {
		r := ResourceRecommendation{Request: w.boostReq, HasRequest: true}
		if w.hasLim {
			r.Limit, r.HasLimit = w.boostLim, true
		}
		recs[w.name] = map[corev1.ResourceName]ResourceRecommendation{corev1.ResourceCPU: r}
	}
	p := in.Params
	p.Managed = Managed{{corev1.ResourceCPU, Request}: true, {corev1.ResourceCPU, Limit}: true}
	plan := Calculate(base, recs, p, AtOnce)
	boosted := AdmissionResult(plan)
	record := &BoostRecord{ReadyFor: in.Boost.ReadyFor.String(), Containers: map[string]BoostContainer{}}
	for _, ch := range boosted.Changes {
		c := refOf(ch).Container(&base.Spec)
		applied, _ := ch.Applied(base)
		bc := BoostContainer{
			Request:        c.Resources.Requests.Cpu().String(),
			BoostedRequest: applied.Requests.Cpu().String(),
		}
		if l := limitOf(c, corev1.ResourceCPU); l != nil {
			bc.Limit, bc.BoostedLimit = l.String(), applied.Limits.Cpu().String()
		}
		if bc.Request == bc.BoostedRequest && bc.Limit == bc.BoostedLimit {
			continue
		}
		record.Containers[ch.Name] = bc
		out.Result.Changes = mergeChanges(out.Result.Changes, ch)
	}
	if len(plan.Bounded) > 0 {
		capped = true
	}
	if len(record.Containers) == 0 {
		out.Outcome, out.Message = BoostHeld, "the bounds or the QoS class held the boost back"
		if len(plan.Bounded) > 0 {
			out.Message += ": " + Summary(plan.Bounded)
		}
		return out
	}
	out.Record = record
	out.Outcome, out.Message = BoostApplied, "cpu "+in.Boost.String()+" until Ready for "+in.Boost.ReadyFor.String()
	if capped {
		out.Outcome = BoostCapped
		if in.HasNodeCPU {
			out.Message += fmt.Sprintf(", capped to fit the largest node's allocatable cpu %s", in.NodeCPU.String(corev1.ResourceCPU))
		}
		if len(plan.Bounded) > 0 {
			out.Message += "; bounded: " + Summary(plan.Bounded)
		}
	}
	if out.Result.SkipReason != "" && len(out.Result.Changes) > 0 {
		out.Result.SkipReason = ""
	}
	return out
}

// scale is part × num / den, rounded down (den > 0).
func scale(part, num, den Units) Units {
	return Units(int64(part) * int64(num) / int64(den))
}

// mergeChanges returns list with ch written over the changes of the same container
// (appended, in processing order, when list has none);
// list itself is not modified.
func mergeChanges(list []ContainerChanges, ch ContainerChanges) []ContainerChanges {
	out := slices.Clone(list)
	for i := range out {
		if out[i].Sidecar == ch.Sidecar && out[i].Index == ch.Index {
			out[i].Requests = merged(out[i].Requests.DeepCopy(), ch.Requests)
			out[i].Limits = merged(out[i].Limits.DeepCopy(), ch.Limits)
			return out
		}
	}
	out = append(out, ch)
	slices.SortStableFunc(out, func(a, b ContainerChanges) int {
		switch {
		case a.Sidecar != b.Sidecar:
			if a.Sidecar {
				return -1
			}
			return 1
		default:
			return a.Index - b.Index
		}
	})
	return out
}

// Unboost returns the changes that take a boost back: each recorded container's cpu
// request (and limit) back to its un-boosted value. Containers the pod no longer has, or
// whose cpu is no longer the boosted value (someone else resized it), are left alone.
func Unboost(pod *corev1.Pod, r BoostRecord) []ContainerChanges {
	var out []ContainerChanges
	for _, ref := range LongRunning(&pod.Spec) {
		bc, ok := r.Containers[ref.Name]
		if !ok {
			continue
		}
		c := ref.Container(&pod.Spec)
		// Only a container still at its boosted values is taken back: request and limit
		// together, so request ≤ limit holds after the patch.
		cur := nonZero(c.Resources.Requests, corev1.ResourceCPU)
		if cur == nil || !sameQuantity(*cur, bc.BoostedRequest) {
			continue
		}
		ch := ref.Changes()
		ch.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(bc.Request)}
		if bc.Limit != "" {
			lim := limitOf(c, corev1.ResourceCPU)
			if lim == nil || !sameQuantity(*lim, bc.BoostedLimit) {
				continue
			}
			ch.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(bc.Limit)}
		}
		if !ch.empty() {
			out = append(out, ch)
		}
	}
	return out
}

func sameQuantity(q resource.Quantity, s string) bool {
	v, err := resource.ParseQuantity(s)
	return err == nil && q.Cmp(v) == 0
}

// RestartsOnResize reports whether c's resizePolicy restarts it when r changes in place.
func RestartsOnResize(c *corev1.Container, r corev1.ResourceName) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == r {
			return p.RestartPolicy == corev1.RestartContainer
		}
	}
	return false
}
