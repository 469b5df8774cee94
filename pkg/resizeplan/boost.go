package resizeplan

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Un-boost steps (policy behaviors.startupBoost): what the resize controller does with a
// pod whose startup boost is active.
const (
	// UnboostWaitReady: the pod is not Ready; the Ready transition (a pod update) wakes it.
	UnboostWaitReady = "wait_ready"
	// UnboostWaitReadyFor: Ready, but not yet for readyFor; requeue after Wait.
	UnboostWaitReadyFor = "wait_ready_for"
	// UnboostNow: Ready for readyFor; resize cpu back to the un-boosted values.
	UnboostNow = "unboost"
	// UnboostNothing: no container is still at its boosted values (someone resized it);
	// the boost is marked ended without a patch.
	UnboostNothing = "nothing_to_take_back"
)

// UnboostDecision is the un-boost's next step for one pod at now.
type UnboostDecision struct {
	Step string
	// Wait is how long until the boost is due (UnboostWaitReadyFor).
	Wait time.Duration
	// Due is when the boost ends (Ready since + readyFor); zero while not Ready.
	Due time.Time
	// Changes take the boost back (UnboostNow).
	Changes []sizing.ContainerChanges
}

// ReadySince is when the pod's Ready condition last turned True; ok is false while the
// pod is not Ready (or the condition has no transition time).
func ReadySince(pod *corev1.Pod) (time.Time, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status != corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
				return time.Time{}, false
			}
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// Unboost decides the un-boost of a pod boosted at admission with record r: once the pod
// has been Ready for readyFor (its Ready condition's transition time plus readyFor, at or
// before now), the changes that resize each still-boosted container's cpu back to its
// un-boosted request and limit; before that, how long to wait. A pod that turns NotReady
// and Ready again restarts the wait: the boost is for starting, and a restart is one.
func Unboost(pod *corev1.Pod, r sizing.BoostRecord, readyFor time.Duration, now time.Time) UnboostDecision {
	since, ok := ReadySince(pod)
	if !ok {
		return UnboostDecision{Step: UnboostWaitReady}
	}
	due := since.Add(readyFor)
	if now.Before(due) {
		return UnboostDecision{Step: UnboostWaitReadyFor, Wait: due.Sub(now), Due: due}
	}
	changes := sizing.Unboost(pod, r)
	if len(changes) == 0 {
		return UnboostDecision{Step: UnboostNothing, Due: due}
	}
	return UnboostDecision{Step: UnboostNow, Due: due, Changes: changes}
}
