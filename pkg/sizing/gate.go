package sizing

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Values of the resize-state annotation (SPEC §9); the contract lives in pkg/apis.
const (
	ResizeStatePending    = v1.ResizeStatePending
	ResizeStateInProgress = v1.ResizeStateInProgress
	ResizeStateDeferred   = v1.ResizeStateDeferred
	ResizeStateInfeasible = v1.ResizeStateInfeasible
	ResizeStateError      = v1.ResizeStateError
	ResizeStateCompleted  = v1.ResizeStateCompleted
)

// GateInput is what the annotation-based steps 1–3 of SPEC §8.2 read.
type GateInput struct {
	// Annotations of the pod.
	Annotations map[string]string
	// Interval is the policy's behaviors.resize.interval.
	Interval time.Duration
	Now      time.Time
}

// ResizeGate runs steps 1–3 of SPEC §8.2 in order; the first blocking check decides.
// Timestamps are RFC 3339; one that does not parse does not block.
func ResizeGate(in GateInput) (reason, message string, blocked bool) {
	checks := []func(GateInput) (string, string, bool){
		// 1. A previous resize has not settled: never stack a new one on it.
		checkResizePending,
		// 2. A failed resize backs off for one interval. A legacy resize-blocked
		//    without resize-blocked-at is evaluated normally.
		checkBlocked,
		// 3. One interval between resizes of the same pod.
		checkCooldown,
	}
	for _, check := range checks {
		if reason, message, blocked := check(in); blocked {
			return reason, message, true
		}
	}
	return "", "", false
}

func checkResizePending(in GateInput) (string, string, bool) {
	switch state := in.Annotations[v1.ResizeStateAnnotation]; state {
	case ResizeStatePending, ResizeStateInProgress, ResizeStateDeferred:
		return ReasonResizePending, fmt.Sprintf("resize state is %s", state), true
	}
	return "", "", false
}

func checkBlocked(in GateInput) (string, string, bool) {
	if at, ok := younger(in, v1.ResizeBlockedAtAnnotation); ok {
		return ReasonBlocked, fmt.Sprintf("resize blocked at %s, retry after %s", at.Format(time.RFC3339), at.Add(in.Interval).UTC().Format(time.RFC3339)), true
	}
	return "", "", false
}

func checkCooldown(in GateInput) (string, string, bool) {
	if at, ok := younger(in, v1.LastResizeAnnotation); ok {
		return ReasonCooldown, fmt.Sprintf("last resized at %s, next after %s", at.Format(time.RFC3339), at.Add(in.Interval).UTC().Format(time.RFC3339)), true
	}
	return "", "", false
}

// younger reports whether the timestamp annotation key parses and is younger than the
// interval at in.Now.
func younger(in GateInput, key string) (time.Time, bool) {
	v, ok := in.Annotations[key]
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, false
	}
	return at, in.Now.Sub(at) < in.Interval
}

// ResizeInput is everything EvaluateResize needs for one candidate pod.
type ResizeInput struct {
	Pod             *corev1.Pod
	Recommendations Recommendations
	Params          Params
	// Interval is the policy's behaviors.resize.interval.
	Interval time.Duration
	Now      time.Time
	// DryRun is true when dry-run covers resize (`resize` or `all`, SPEC §10.3).
	DryRun bool
}

// EvaluateResize is the per-pod evaluation of SPEC §8.2: the gate (steps 1–3), the
// calculator (steps 4–5), then dry-run (step 6). An empty Reason means patch (step 7).
func EvaluateResize(in ResizeInput) ResizeDecision {
	if reason, message, blocked := ResizeGate(GateInput{Annotations: in.Pod.Annotations, Interval: in.Interval, Now: in.Now}); blocked {
		return ResizeDecision{Reason: reason, Message: message}
	}
	d := Resize(in.Pod, in.Recommendations, in.Params)
	if d.Reason == "" && in.DryRun {
		d.Reason, d.Message = ReasonDryRun, "dry-run: "+d.Message
	}
	return d
}
