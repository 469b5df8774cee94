package enrollment

import (
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
)

// EventSized is recorded on a pod the webhook sized at admission: what it wrote and from
// which profile. The webhook cannot record it (a pod created from generateName has no name
// at admission), so this controller does when it first sees the pod with applied-*
// annotations. Events are limited per profile (sizedBurst, then one per sizedEvery) so a
// large rollout does not flood the API server; the webhook logs every admission.
const EventSized = "Sized"

// EventRecommendationBounded (Warning) is recorded with Sized when the webhook capped,
// clamped or held back values (the bounded annotation): profile data outside the allowed
// range, or values a LimitRange, the pod-level resources or a quota would have refused.
const EventRecommendationBounded = "RecommendationBounded"

const (
	sizedBurst = 5
	sizedEvery = time.Minute
)

// sizedLog remembers the pods whose Sized event was considered (by name, with their UID,
// so a pod recreated under the same name counts as new); deleted pods are forgotten.
type sizedLog struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]types.UID
}

// first reports whether the pod is new, and remembers it.
func (s *sizedLog) first(key types.NamespacedName, uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[types.NamespacedName]types.UID{}
	}
	if s.seen[key] == uid {
		return false
	}
	s.seen[key] = uid
	return true
}

func (s *sizedLog) forget(key types.NamespacedName) {
	s.mu.Lock()
	delete(s.seen, key)
	s.mu.Unlock()
}

// SetEvents makes the controller record Sized events through r (nil records none).
func (c *Controller) SetEvents(r *events.Recorder) {
	c.events = r
	c.sizedLimit = events.NewLimiter(sizedBurst, sizedEvery)
}

// Applied renders a pod's applied-* annotations: "cpu request 300m, memory limit 231Mi";
// "" when the webhook wrote none.
func Applied(pod *corev1.Pod) string {
	var parts []string
	for _, r := range []string{"cpu", "memory", "ephemeral-storage"} {
		for _, f := range []string{"request", "limit"} {
			if v, ok := pod.Annotations[ballastv1.AppliedAnnotation(r, f)]; ok {
				parts = append(parts, r+" "+f+" "+v)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// sized records the Sized event of a pod the first time it is seen with applied-*
// annotations, within the profile's rate limit.
func (c *Controller) sized(pod *corev1.Pod, profile string) {
	if c.events == nil || pod.Annotations[ballastv1.ProfileRefAnnotation] != profile {
		return
	}
	applied := Applied(pod)
	if applied == "" || !c.sizedPods.first(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, pod.UID) || !c.sizedLimit.Allow(profile, c.clock.Now()) {
		return
	}
	msg := "sized at admission from WorkloadProfile " + profile + ": " + applied
	if clamped := clampedOf(pod); clamped != "" {
		msg += " (clamped: " + clamped + ")"
	}
	bounded := pod.Annotations[ballastv1.BoundedAnnotation]
	if bounded != "" {
		msg += " (bounded: " + bounded + ")"
	}
	c.events.Publish(events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: EventSized, Message: msg})
	if bounded != "" {
		c.events.Publish(events.Event{Object: pod, Type: corev1.EventTypeWarning, Reason: EventRecommendationBounded,
			Message: "WorkloadProfile " + profile + " values not applied as recommended: " + bounded})
	}
}

func clampedOf(pod *corev1.Pod) string {
	var parts []string
	for _, r := range []string{"cpu", "memory", "ephemeral-storage"} {
		if v, ok := pod.Annotations[ballastv1.ClampedAnnotation(r)]; ok {
			parts = append(parts, "clamped-"+r+"-request "+v)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
