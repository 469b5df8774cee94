package understudy

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
)

// Reasons of the events recorded on Understudies (SPEC §15.6).
const (
	ReasonSurgeStarted = "SurgeStarted"
	ReasonEvictionHeld = "EvictionHeld"
	ReasonReleased     = "Released"
	ReasonRelaxed      = "Relaxed"
	ReasonUnsupported  = "Unsupported"
)

func surgeEvent(u *ballastv1.Understudy, pod, node, source string, from, to int32) events.Event {
	return events.Event{Object: u, Type: corev1.EventTypeNormal, Reason: ReasonSurgeStarted,
		Message: fmt.Sprintf("node %s is doomed (%s): scaling %s from %d to %d replicas to replace pod %s",
			node, source, u.Spec.TargetRef.Name, from, to, pod)}
}

// podSurgeEvent is recorded on the doomed pod, where an SRE looking at it will find it.
func podSurgeEvent(u *ballastv1.Understudy, pod runtime.Object, node, source string) events.Event {
	return events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: ReasonSurgeStarted,
		Message: fmt.Sprintf("node %s is doomed (%s): Understudy %s/%s is raising a stand-in; this pod's eviction is held until it is Ready",
			node, source, u.Namespace, u.Name)}
}

func heldEvent(u *ballastv1.Understudy, pod, reason string) events.Event {
	return events.Event{Object: u, Type: corev1.EventTypeNormal, Reason: ReasonEvictionHeld,
		Message: fmt.Sprintf("eviction of pod %s held: waiting for a ready stand-in (%s)", pod, reason)}
}

func releasedEvent(u *ballastv1.Understudy, standIn, doomed string) events.Event {
	return events.Event{Object: u, Type: corev1.EventTypeNormal, Reason: ReasonReleased,
		Message: fmt.Sprintf("stand-in %s is Ready: the eviction of pod %s may proceed", standIn, doomed)}
}

func relaxedEvent(u *ballastv1.Understudy, reason, detail string) events.Event {
	return events.Event{Object: u, Type: corev1.EventTypeWarning, Reason: ReasonRelaxed,
		Message: fmt.Sprintf("hold relaxed without a Ready stand-in (%s): %s", reason, detail)}
}

func unsupportedEvent(u *ballastv1.Understudy, reason, msg string) events.Event {
	return events.Event{Object: u, Type: corev1.EventTypeWarning, Reason: ReasonUnsupported,
		Message: fmt.Sprintf("%s: %s; nothing is held or surged", reason, msg)}
}
