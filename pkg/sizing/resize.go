package sizing

import (
	"fmt"
	"math/big"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResizeDecision is the outcome of steps 4–7 of SPEC §8.2 for one pod (and of steps 1–3
// when it comes from EvaluateResize).
type ResizeDecision struct {
	// Reason is empty when the pod should be patched; otherwise one of the Reason*
	// constants (a skip).
	Reason string
	// Message says why, for logs.
	Message string
	// Changes are the containers to patch (ResizePatch renders them). Empty for every
	// skip except ReasonDryRun, which carries the would-be patch.
	Changes []ContainerChanges
	// Clamps are the request clamps in the patch (one RequestClampedToLimit event and
	// clamped metric each). Empty whenever Changes is.
	Clamps []Clamp
	// QoSBefore and QoSAfter are the pod's class now and with Changes applied (equal
	// unless Reason is ReasonQoSPinned; empty when a gate check decided).
	QoSBefore, QoSAfter corev1.PodQOSClass
}

// Resize computes an in-place resize of a running pod per SPEC §8.3 and decides steps 4
// and 5 of §8.2. Only cpu and memory of long-running containers matched by name in recs
// are changed; other recommended resources are only checked for drift to report
// ReasonNotResizable. Limits are stepped first; each request's recommendation is clamped
// to the limit in effect after this cycle (one unit below it when an equal request would
// turn a Burstable pod Guaranteed) and stepped toward that; finally every request is
// bounded by its patched limit.
func Resize(pod *corev1.Pod, recs Recommendations, s ResizeSettings) ResizeDecision {
	before := qosOf(pod, nil)
	p := planResize(pod, recs, s, false)
	if before == corev1.PodQOSBurstable && qosOf(pod, p.changes) == corev1.PodQOSGuaranteed {
		p = planResize(pod, recs, s, true)
	}
	d := ResizeDecision{QoSBefore: before, QoSAfter: qosOf(pod, p.changes)}
	checks := []func(resizePlan, ResizeDecision) (reason, message string, blocked bool){
		// Step 4: nothing to adjust.
		checkNoAdjustment,
		// Step 5: the patch would change the QoS class (the kubelet would reject it).
		checkQoSChange,
	}
	for _, check := range checks {
		if reason, message, blocked := check(p, d); blocked {
			d.Reason, d.Message = reason, message
			return d
		}
	}
	d.Changes, d.Clamps = p.changes, p.clamps
	d.Message = fmt.Sprintf("resize %d container(s)", len(p.changes))
	return d
}

func checkNoAdjustment(p resizePlan, _ ResizeDecision) (string, string, bool) {
	switch {
	case len(p.changes) > 0:
		return "", "", false
	case len(p.notResizable) > 0:
		return ReasonNotResizable, "drift only in resources not resizable in place: " + strings.Join(p.notResizable, "; "), true
	case len(p.heldAtClamp) > 0:
		return ReasonClampedAtLimit, "requests held at their limits: " + strings.Join(p.heldAtClamp, "; "), true
	default:
		return ReasonNoDrift, "no recommendation drifted beyond its threshold", true
	}
}

func checkQoSChange(_ resizePlan, d ResizeDecision) (string, string, bool) {
	if d.QoSAfter == d.QoSBefore {
		return "", "", false
	}
	return ReasonQoSPinned, fmt.Sprintf("resize would change the QoS class from %s to %s", d.QoSBefore, d.QoSAfter), true
}

// resizePlan is the adjustment of a whole pod.
type resizePlan struct {
	changes      []ContainerChanges
	clamps       []Clamp
	notResizable []string // drifted resources that cannot be resized in place
	heldAtClamp  []string // requests whose only gap is their clamp
}

func planResize(pod *corev1.Pod, recs Recommendations, s ResizeSettings, stepDown bool) resizePlan {
	var p resizePlan
	maxPct := s.maxChange()
	for _, ref := range longRunning(pod) {
		rec, ok := recs[ref.name]
		if !ok {
			continue
		}
		c, ch := ref.container(pod), ref.changes()
		for _, res := range recommendedResources {
			r, ok := rec[res]
			switch {
			case !ok:
			case resizable(res):
				p.adjust(c, &ch, res, r, s, maxPct, stepDown)
			default:
				p.checkNotResizable(c, res, r, s)
			}
		}
		if !ch.empty() {
			p.changes = append(p.changes, ch)
		}
	}
	return p
}

// adjust computes the new limit, then the new request, of one cpu or memory resource.
func (p *resizePlan) adjust(c *corev1.Container, ch *ContainerChanges, res corev1.ResourceName, r ResourceRecommendation, s ResizeSettings, maxPct *big.Rat, stepDown bool) {
	curLim := unitsOf(res, limitOf(c, res))
	curReq := unitsOf(res, quantity(c.Resources.Requests, res))

	// Limits first: the limit in effect after this cycle.
	limAfter := curLim
	if s.Managed.Has(res, Limit) && r.Limit != nil {
		if t, moved := step(curLim, toUnits(res, *r.Limit), s.threshold(res, Limit), maxPct); moved {
			limAfter = t
		}
	}
	// The bound for the request: that limit, one unit below it on a step-down.
	bound := limAfter
	if stepDown && bound > 0 {
		bound--
	}

	reqAfter, preClamp := curReq, int64(-1)
	if s.Managed.Has(res, Request) && r.Request != nil {
		recReq, thr := toUnits(res, *r.Request), s.threshold(res, Request)
		target := recReq
		if limAfter > 0 && recReq >= limAfter {
			target = bound
			if recReq > limAfter {
				preClamp = recReq
			}
		}
		if t, moved := step(curReq, target, thr, maxPct); moved {
			reqAfter = t
		} else if preClamp >= 0 && drifts(curReq, recReq, thr) {
			p.heldAtClamp = append(p.heldAtClamp, fmt.Sprintf("container %s: %s request %s held at %s (recommended %s)",
				c.Name, res, qty(res, curReq), qty(res, bound), qty(res, recReq)))
		}
	}
	// Finally the request is bounded by the patched limit, even below its threshold.
	if limAfter > 0 && reqAfter > limAfter {
		if preClamp < 0 {
			preClamp = reqAfter
		}
		reqAfter = bound
	}

	if limAfter != curLim {
		ch.Limits = merged(ch.Limits, corev1.ResourceList{res: fromUnits(res, limAfter)})
	}
	if reqAfter != curReq {
		ch.Requests = merged(ch.Requests, corev1.ResourceList{res: fromUnits(res, reqAfter)})
		if preClamp >= 0 {
			p.clamps = append(p.clamps, Clamp{Container: c.Name, Resource: res,
				Recommended: fromUnits(res, preClamp), Limit: fromUnits(res, limAfter), Written: fromUnits(res, reqAfter)})
		}
	}
}

// checkNotResizable records drift of a resource that only admission can change.
func (p *resizePlan) checkNotResizable(c *corev1.Container, res corev1.ResourceName, r ResourceRecommendation, s ResizeSettings) {
	for _, f := range [...]struct {
		field Field
		rec   *int64
		cur   int64
	}{
		{Request, recUnits(res, r.Request), unitsOf(res, quantity(c.Resources.Requests, res))},
		{Limit, recUnits(res, r.Limit), unitsOf(res, limitOf(c, res))},
	} {
		if f.rec != nil && s.Managed.Has(res, f.field) && drifts(f.cur, *f.rec, s.threshold(res, f.field)) {
			p.notResizable = append(p.notResizable, fmt.Sprintf("container %s: %s %s %s → %s",
				c.Name, res, f.field, qty(res, f.cur), qty(res, *f.rec)))
		}
	}
}

// unitsOf is q in whole units, 0 when absent.
func unitsOf(res corev1.ResourceName, q *resource.Quantity) int64 {
	if q == nil {
		return 0
	}
	return toUnits(res, *q)
}

// recUnits is a recommendation in whole units, nil when absent.
func recUnits(res corev1.ResourceName, q *resource.Quantity) *int64 {
	if q == nil {
		return nil
	}
	v := toUnits(res, *q)
	return &v
}

func qty(res corev1.ResourceName, v int64) string {
	q := fromUnits(res, v)
	return q.String()
}
