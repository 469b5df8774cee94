package profiles

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/recommend"
)

// Reasons of the events this controller records on WorkloadProfiles, each on a transition
// only (so a steady profile records nothing).
const (
	// EventSufficient: every container met its readiness targets; recommendations apply.
	EventSufficient = "Sufficient"
	// EventAccruing: a Sufficient profile fell back to Accruing (message: what is missing).
	EventAccruing = "Accruing"
	// EventOOMBump: an OOM kill raised a container's memory recommendation.
	EventOOMBump = "OOMBump"
	// EventOrphaned: the profile has no bound pod left; the orphan TTL runs.
	EventOrphaned = "Orphaned"
	// EventSourceUnavailable: a resource the policy names gets no samples, or its series
	// cannot be read.
	EventSourceUnavailable = "SourceUnavailable"
)

// SetEvents makes the controller record its events through r (nil records none).
func (c *Controller) SetEvents(r *events.Recorder) { c.events = r }

// transitions are the events of one reconcile: what changed between the stored status
// and the one about to be written.
func transitions(wp *ballastv1.WorkloadProfile, next *ballastv1.WorkloadProfileStatus) []events.Event {
	var out []events.Event
	ev := func(typ, reason, msg string) {
		out = append(out, events.Event{Object: wp, Type: typ, Reason: reason, Message: msg})
	}
	old := &wp.Status
	suff := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionSufficient)
	switch {
	case !old.MeetsThreshold && next.MeetsThreshold:
		ev(corev1.EventTypeNormal, EventSufficient, "Sufficient: recommends "+recommend.Summary(next.Containers))
	case old.MeetsThreshold && !next.MeetsThreshold && suff != nil:
		ev(corev1.EventTypeWarning, EventAccruing, "Accruing again: "+suff.Message)
	}
	if isTrue(next.Conditions, ballastv1.ConditionOrphaned) && !isTrue(old.Conditions, ballastv1.ConditionOrphaned) {
		ev(corev1.EventTypeNormal, EventOrphaned, "no bound pods; history is kept until the orphan TTL runs out")
	}
	if msg := unavailable(old, next); msg != "" {
		ev(corev1.EventTypeWarning, EventSourceUnavailable, msg)
	}
	for _, b := range oomBumps(old.Containers, next.Containers) {
		ev(corev1.EventTypeWarning, EventOOMBump, b)
	}
	out = append(out, boundedTransition(wp, next)...)
	return append(out, storeFullEvents(wp, next)...)
}

func isTrue(conds []metav1.Condition, t string) bool {
	return meta.IsStatusConditionTrue(conds, t)
}

// unavailable says which sources stopped delivering since the stored status: the Ready
// condition turning False for missing samples after it was True, or series that cannot be
// read (read errors not reported before). A new profile still waiting for its first samples
// is not "unavailable"; its status says so. "" when nothing new is unavailable.
func unavailable(old, next *ballastv1.WorkloadProfileStatus) string {
	var parts []string
	if c := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionReady); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == ballastv1.ReasonMissingSamples &&
		isTrue(old.Conditions, ballastv1.ConditionReady) {
		parts = append(parts, c.Message)
	}
	before := readErrors(old)
	for _, e := range readErrors(next) {
		if !slices.Contains(before, e) {
			parts = append(parts, e)
		}
	}
	return strings.Join(parts, "; ")
}

// readErrors lists "container resource: error" for every series that could not be read.
func readErrors(st *ballastv1.WorkloadProfileStatus) []string {
	var out []string
	for _, cp := range st.Containers {
		for _, g := range cp.Readiness {
			if g.SourceError != "" && g.SourceError != recommend.NoSamplesYet {
				out = append(out, fmt.Sprintf("%s %s: %s", cp.Name, g.Resource, g.SourceError))
			}
		}
	}
	return out
}

// oomBumps describes each memory recommendation an OOM kill raised since the stored status.
func oomBumps(old, next []ballastv1.ContainerProfile) []string {
	var out []string
	for _, cp := range next {
		rec, ok := cp.Recommendations[recommend.ResourceMemory]
		if !ok || !(strings.HasPrefix(rec.LimitBasis, oomBasis) || strings.HasPrefix(rec.RequestBasis, oomBasis)) {
			continue
		}
		i := slices.IndexFunc(old, func(o ballastv1.ContainerProfile) bool { return o.Name == cp.Name })
		if i >= 0 && sameRaise(old[i].Recommendations[recommend.ResourceMemory], rec) {
			continue
		}
		out = append(out, fmt.Sprintf("container %s: an OOM kill raised memory to request %s limit %s",
			cp.Name, dash(rec.Request), dash(rec.Limit)))
	}
	return out
}

const oomBasis = recommend.BasisOOM

// sameRaise: every value of next that an OOM kill raised was raised, to the same value,
// in old already. The other field moving with the statistics is no new raise.
func sameRaise(old, next ballastv1.Recommendation) bool {
	if strings.HasPrefix(next.RequestBasis, oomBasis) &&
		(!strings.HasPrefix(old.RequestBasis, oomBasis) || old.Request != next.Request) {
		return false
	}
	if strings.HasPrefix(next.LimitBasis, oomBasis) &&
		(!strings.HasPrefix(old.LimitBasis, oomBasis) || old.Limit != next.Limit) {
		return false
	}
	return true
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
