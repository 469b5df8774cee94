package resize

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

// Event reasons on the pod (SPEC §11.3), plus the Deferred ladder's own.
const (
	EventResized               = "Resized"
	EventResizeBlocked         = "ResizeBlocked"
	EventRequestClampedToLimit = "RequestClampedToLimit"
	EventResizeDeferred        = "ResizeDeferred"
	EventResizeInfeasible      = "ResizeInfeasible"
	EventResizeCompleted       = "ResizeCompleted"
	// EventResizeLadder records a step of the Deferred ladder (guard held, donors shrunk,
	// handed over, capped, given up) with the rung and why.
	EventResizeLadder = "ResizeLadder"
	// EventResizeRaised records a fast raise after an OOM kill.
	EventResizeRaised = "ResizeRaised"
)

// Events emits the controller's core v1 events on pods, source component "ballast"
// (the recorder is the manager's GetEventRecorderFor(ballastv1.EventComponent)).
type Events struct {
	rec record.EventRecorder
}

// NewEvents wraps a recorder; a nil recorder emits nothing.
func NewEvents(rec record.EventRecorder) Events { return Events{rec: rec} }

func (e Events) emit(pod *corev1.Pod, typ, reason, msg string) {
	if e.rec == nil {
		return
	}
	e.rec.Event(pod, typ, reason, msg)
}

// Resized: the resize patch was accepted.
func (e Events) Resized(pod *corev1.Pod) {
	e.emit(pod, corev1.EventTypeNormal, EventResized, "in-place resize applied by Ballast")
}

// Clamped: a request in the patch was held at its limit (SPEC §8.4).
func (e Events) Clamped(pod *corev1.Pod, container, res, rec, limit string) {
	e.emit(pod, corev1.EventTypeWarning, EventRequestClampedToLimit, fmt.Sprintf(
		"container %s: recommended %s request %s exceeds its limit %s; request clamped to the limit", container, res, rec, limit))
}

// Transition emits the one event of a state change (SPEC §9); Pending and InProgress
// emit none.
func (e Events) Transition(pod *corev1.Pod, t resizeplan.Transition) {
	switch t.To {
	case ballastv1.ResizeStateDeferred:
		e.emit(pod, corev1.EventTypeNormal, EventResizeDeferred, "in-place resize deferred by the kubelet: "+t.Message)
	case ballastv1.ResizeStateInfeasible:
		e.emit(pod, corev1.EventTypeWarning, EventResizeInfeasible, "in-place resize infeasible: "+t.Message)
	case ballastv1.ResizeStateError:
		e.emit(pod, corev1.EventTypeWarning, EventResizeBlocked, "in-place resize failed: "+t.Message)
	case ballastv1.ResizeStateCompleted:
		e.emit(pod, corev1.EventTypeNormal, EventResizeCompleted, "in-place resize completed")
	}
}

// Ladder records one rung of the Deferred ladder.
func (e Events) Ladder(pod *corev1.Pod, rung resizeplan.Rung, msg string) {
	typ := corev1.EventTypeNormal
	if rung == resizeplan.RungCap || rung == resizeplan.RungGiveUp {
		typ = corev1.EventTypeWarning
	}
	e.emit(pod, typ, EventResizeLadder, fmt.Sprintf("%s: %s", rung, msg))
}

// Raised records a fast raise after an OOM kill.
func (e Events) Raised(pod *corev1.Pod, msg string) {
	e.emit(pod, corev1.EventTypeNormal, EventResizeRaised, msg)
}
