package resize

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
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
	// EventRestartOnly records memory shrinks held because the container's runtime (jvm)
	// cannot give memory back in place; they take effect when the pod restarts.
	EventRestartOnly = "RestartOnly"
)

// restartOnlyEvent: memory shrinks held for a restart (sizing.ReasonRestartOnly).
func restartOnlyEvent(pod *corev1.Pod, held []string) events.Event {
	return events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: EventRestartOnly,
		Message: "memory shrink held until the pod restarts (runtime jvm): " + strings.Join(held, "; ")}
}

// The controller's events, published through the shared events.Recorder (source component
// "ballast"); in dry-run the controller has no recorder and publishes none (SPEC §10.3).

// resizedEvent: the resize patch was accepted.
func resizedEvent(pod *corev1.Pod) events.Event {
	return events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: EventResized, Message: "in-place resize applied by Ballast"}
}

// clampedEvent: a request in the patch was held at its limit (SPEC §8.4).
func clampedEvent(pod *corev1.Pod, container, res, rec, limit string) events.Event {
	return events.Event{Object: pod, Type: corev1.EventTypeWarning, Reason: EventRequestClampedToLimit, Message: fmt.Sprintf(
		"container %s: recommended %s request %s exceeds its limit %s; request clamped to the limit", container, res, rec, limit)}
}

// transitionEvents are the one event of a state change (SPEC §9); Pending and InProgress
// have none.
func transitionEvents(pod *corev1.Pod, t resizeplan.Transition) []events.Event {
	ev := func(typ, reason, msg string) []events.Event {
		return []events.Event{{Object: pod, Type: typ, Reason: reason, Message: msg}}
	}
	switch t.To {
	case ballastv1.ResizeStateDeferred:
		return ev(corev1.EventTypeNormal, EventResizeDeferred, "in-place resize deferred by the kubelet: "+t.Message)
	case ballastv1.ResizeStateInfeasible:
		return ev(corev1.EventTypeWarning, EventResizeInfeasible, "in-place resize infeasible: "+t.Message)
	case ballastv1.ResizeStateError:
		return ev(corev1.EventTypeWarning, EventResizeBlocked, "in-place resize failed: "+t.Message)
	case ballastv1.ResizeStateCompleted:
		return ev(corev1.EventTypeNormal, EventResizeCompleted, "in-place resize completed")
	}
	return nil
}

// ladderEvent records one rung of the Deferred ladder.
func ladderEvent(pod *corev1.Pod, rung resizeplan.Rung, msg string) events.Event {
	typ := corev1.EventTypeNormal
	if rung == resizeplan.RungCap || rung == resizeplan.RungGiveUp {
		typ = corev1.EventTypeWarning
	}
	return events.Event{Object: pod, Type: typ, Reason: EventResizeLadder, Message: fmt.Sprintf("%s: %s", rung, msg)}
}

// raisedEvent records a fast raise (OOM kill, sustained memory pressure).
func raisedEvent(pod *corev1.Pod, msg string) events.Event {
	return events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: EventResizeRaised, Message: msg}
}

// relocatedEvent is recorded on the old pod when the relocation retires it.
func relocatedEvent(old *corev1.Pod, standIn, node string) events.Event {
	return events.Event{Object: old, Type: corev1.EventTypeNormal, Reason: EventRelocated, Message: fmt.Sprintf(
		"relocated without downtime: stand-in %s is Ready on node %s at its admission size; this pod is retired", standIn, node)}
}

// revertedEvents record a raise-back after a shrink on the pod and, when it is known
// (has a UID), on its profile.
func revertedEvents(pod *corev1.Pod, wp *ballastv1.WorkloadProfile, msg string) []events.Event {
	out := []events.Event{{Object: pod, Type: corev1.EventTypeWarning, Reason: EventResizeReverted, Message: msg}}
	if wp.UID != "" {
		out = append(out, events.Event{Object: wp, Type: corev1.EventTypeWarning, Reason: EventResizeReverted,
			Message: fmt.Sprintf("pod %s/%s: %s", pod.Namespace, pod.Name, msg)})
	}
	return out
}

// hpaConflictEvent: behaviors.hpa left requests an HPA scales on as written.
func hpaConflictEvent(pod *corev1.Pod, msg string) events.Event {
	return events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: sizing.ReasonHPAConflict, Message: msg}
}
