package policies

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/control/events"
)

// Reasons of the events this controller records on policies, once per change of the
// problem (SPEC §3.3, §11.4).
const (
	// ReasonPolicyInvalid: the policy failed validation and is skipped until fixed.
	ReasonPolicyInvalid = "PolicyInvalid"
	// ReasonNeverReady: readiness.minTimeSpan exceeds the retention window.
	ReasonNeverReady = "MinTimeSpanExceedsRetention"
)

func invalidEvent(p client.Object, reason, msg string) events.Event {
	return events.Event{Object: p, Type: corev1.EventTypeWarning, Reason: ReasonPolicyInvalid,
		Message: fmt.Sprintf("policy is invalid (%s: %s) and is skipped until fixed", reason, msg)}
}

func neverReadyEvent(p client.Object, minTimeSpan, retention string) events.Event {
	return events.Event{Object: p, Type: corev1.EventTypeWarning, Reason: ReasonNeverReady,
		Message: fmt.Sprintf("readiness.minTimeSpan %s is longer than the retention window %s: profiles can never become ready", minTimeSpan, retention)}
}
