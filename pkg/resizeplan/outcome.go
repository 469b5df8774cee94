package resizeplan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Outcome attribute values of ballast.resize.outcome (SPEC §9, §11.2).
const (
	OutcomeDeferred   = "deferred"
	OutcomeInfeasible = "infeasible"
	OutcomeInProgress = "in_progress"
	OutcomeError      = "error"
	OutcomeCompleted  = "completed"
)

// Kubelet condition reasons (k8s.io/api core/v1 PodReason*) read by Observe.
const (
	reasonDeferred   = "Deferred"
	reasonInfeasible = "Infeasible"
	reasonError      = "Error"
)

// Observation is what a pod's status says about the resize Ballast issued.
type Observation struct {
	// State is one of the ballastv1.ResizeState* values.
	State string
	// Message is the kubelet's condition message (Deferred, Infeasible, Error), or the API
	// error text.
	Message string
}

// Observe maps a pod's resize conditions to a resize-state (SPEC §9). since is the
// generation Ballast's patch produced (0 when unknown, e.g. after a restart): status is
// trusted only once it reports at least max(since, metadata.generation), so a condition
// left over from an earlier resize is never read as the outcome of this one.
// PodResizePending is read before PodResizeInProgress: both are present when a new resize
// arrived while one was in progress, and the pending one is the newer.
func Observe(pod *corev1.Pod, since int64) Observation {
	want := max(since, pod.Generation)
	pending, inProgress := condition(pod, corev1.PodResizePending), condition(pod, corev1.PodResizeInProgress)
	trusted := func(c *corev1.PodCondition) bool {
		if c == nil || c.Status != corev1.ConditionTrue {
			return false
		}
		og := c.ObservedGeneration
		if og == 0 { // kubelets before per-condition generations: fall back to the pod's
			og = pod.Status.ObservedGeneration
		}
		return og >= want
	}
	switch {
	case trusted(pending) && pending.Reason == reasonInfeasible:
		return Observation{State: ballastv1.ResizeStateInfeasible, Message: pending.Message}
	case trusted(pending):
		// The kubelet normalises every other admission failure to Deferred.
		return Observation{State: ballastv1.ResizeStateDeferred, Message: pending.Message}
	case trusted(inProgress) && inProgress.Reason == reasonError:
		return Observation{State: ballastv1.ResizeStateError, Message: inProgress.Message}
	case trusted(inProgress):
		return Observation{State: ballastv1.ResizeStateInProgress, Message: inProgress.Message}
	case live(pending) || live(inProgress):
		// A condition of an older generation: the kubelet has not reported on this one yet.
		return Observation{State: ballastv1.ResizeStatePending}
	case pod.Status.ObservedGeneration >= want:
		return Observation{State: ballastv1.ResizeStateCompleted}
	default:
		return Observation{State: ballastv1.ResizeStatePending}
	}
}

func live(c *corev1.PodCondition) bool { return c != nil && c.Status == corev1.ConditionTrue }

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Transition is a change of a pod's resize-state with what it emits: one event and one
// outcome count (SPEC §9), and the blocked backoff for Infeasible and Error.
type Transition struct {
	From, To string
	Message  string
}

// Next returns the transition from the recorded state to the observed one; ok is false
// when the state did not change (nothing is written, emitted or counted).
func Next(recorded string, o Observation) (Transition, bool) {
	if o.State == recorded {
		return Transition{}, false
	}
	return Transition{From: recorded, To: o.State, Message: o.Message}, true
}

// Outcome is the ballast.resize.outcome attribute of the transition; "" for Pending,
// which is counted as ballast.resize.applied at patch time instead.
func (t Transition) Outcome() string {
	switch t.To {
	case ballastv1.ResizeStateDeferred:
		return OutcomeDeferred
	case ballastv1.ResizeStateInfeasible:
		return OutcomeInfeasible
	case ballastv1.ResizeStateInProgress:
		return OutcomeInProgress
	case ballastv1.ResizeStateError:
		return OutcomeError
	case ballastv1.ResizeStateCompleted:
		return OutcomeCompleted
	}
	return ""
}

// Blocks reports whether the transition sets resize-blocked and -blocked-at.
func (t Transition) Blocks() bool {
	return t.To == ballastv1.ResizeStateInfeasible || t.To == ballastv1.ResizeStateError
}

// Settling reports whether state is one in which Ballast issues no new resize to the pod
// and keeps observing it.
func Settling(state string) bool {
	switch state {
	case ballastv1.ResizeStatePending, ballastv1.ResizeStateInProgress, ballastv1.ResizeStateDeferred:
		return true
	}
	return false
}

func (t Transition) String() string { return fmt.Sprintf("%s→%s", t.From, t.To) }

// Deferred reports whether the kubelet reports the pod's resize Deferred now (of any
// generation): the pod waits for room on its node.
func Deferred(p *corev1.Pod) bool {
	c := condition(p, corev1.PodResizePending)
	return c != nil && c.Status == corev1.ConditionTrue && c.Reason == reasonDeferred
}
