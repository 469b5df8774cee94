package sizing

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
	// Plan is the calculator's Stepped plan behind the decision, per container, resource
	// and field (current, recommended, target, clamp, reason). Empty when a gate check
	// decided.
	Plan Plan
	// RestartOnly lists the memory shrinks held for a runtime that cannot shrink in place
	// (jvm), whether or not other changes go out (one RestartOnly event).
	RestartOnly []string
	// Pod is the pod-level spec.resources to resize with the containers (policy
	// podLevel: size), nil when nothing changes there.
	Pod *PodPlan
}

// Resize computes an in-place resize of a running pod per SPEC §8.3 (Calculate with
// Stepped) and decides steps 4 and 5 of §8.2. Only cpu and memory of long-running
// containers matched by name in recs are changed; other recommended resources are only
// checked for drift to report ReasonNotResizable.
func Resize(pod *corev1.Pod, recs Recommendations, p Params) ResizeDecision {
	return ResizeOf(Calculate(pod, recs, p, Stepped))
}

// ResizeOf decides steps 4 and 5 of SPEC §8.2 from a Stepped plan.
func ResizeOf(plan Plan) ResizeDecision {
	d := ResizeDecision{QoSBefore: plan.QoSBefore, QoSAfter: plan.QoSAfter, Plan: plan, RestartOnly: plan.restartOnly()}
	changes := plan.Changes()
	checks := []func(Plan, []ContainerChanges) (reason, message string, blocked bool){
		// Step 4: nothing to adjust.
		checkNoAdjustment,
		// Step 5: the patch would change the QoS class (the kubelet would reject it).
		checkQoSChange,
	}
	for _, check := range checks {
		if reason, message, blocked := check(plan, changes); blocked {
			d.Reason, d.Message = reason, message
			return d
		}
	}
	d.Changes = changes
	if plan.Pod != nil && plan.Pod.Changed {
		d.Pod = plan.Pod
	}
	for _, cp := range plan.Containers {
		for _, rp := range cp.Resources {
			if rp.Request.Changed && rp.Request.Clamped {
				d.Clamps = append(d.Clamps, clampOf(cp.Name, rp))
			}
		}
	}
	d.Message = fmt.Sprintf("resize %d container(s)", len(changes))
	return d
}

func checkNoAdjustment(plan Plan, changes []ContainerChanges) (string, string, bool) {
	if len(changes) > 0 {
		return "", "", false
	}
	var notResizable, held []string
	for _, cp := range plan.Containers {
		for _, rp := range cp.Resources {
			for _, f := range [...]struct {
				field Field
				plan  FieldPlan
			}{{Request, rp.Request}, {Limit, rp.Limit}} {
				res := rp.Resource
				switch f.plan.Reason {
				case ReasonNotResizable:
					notResizable = append(notResizable, fmt.Sprintf("container %s: %s %s %s → %s",
						cp.Name, res, f.field, f.plan.Current.String(res), f.plan.Recommended.String(res)))
				case ReasonClampedAtLimit:
					held = append(held, fmt.Sprintf("container %s: %s request %s held at %s (recommended %s)",
						cp.Name, res, f.plan.Current.String(res), f.plan.Bound.String(res), f.plan.Recommended.String(res)))
				}
			}
		}
	}
	var heldBy string
	for _, n := range plan.Bounded {
		if n.Held {
			heldBy = n.Reason
		}
	}
	switch {
	case plan.HeldAll != "":
		return plan.HeldAll, "every change held back by its bounds: " + Summary(plan.Bounded), true
	case len(notResizable) > 0:
		return ReasonNotResizable, "drift only in resources not resizable in place: " + strings.Join(notResizable, "; "), true
	case len(plan.restartOnly()) > 0:
		return ReasonRestartOnly, "memory shrinks wait for a restart: " + strings.Join(plan.restartOnly(), "; "), true
	case len(held) > 0:
		return ReasonClampedAtLimit, "requests held at their limits: " + strings.Join(held, "; "), true
	case heldBy != "":
		return heldBy, "changes held back by their bounds: " + Summary(plan.Bounded), true
	default:
		return ReasonNoDrift, "no recommendation drifted beyond its threshold", true
	}
}

func checkQoSChange(plan Plan, _ []ContainerChanges) (string, string, bool) {
	if plan.QoSAfter == plan.QoSBefore {
		return "", "", false
	}
	return ReasonQoSPinned, fmt.Sprintf("resize would change the QoS class from %s to %s", plan.QoSBefore, plan.QoSAfter), true
}
