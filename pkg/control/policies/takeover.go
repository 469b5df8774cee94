package policies

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/logging"
)

// Condition and reasons of the take-over report (SPEC §3.5: a profile's name and
// measurement hash carry the governing policy, so a policy that starts to win pods other
// profiles were accrued for moves those pods to new profiles with empty history).
const (
	// ConditionProfilesTakenOver is True while profiles with history accrued under another
	// policy (or none) have pods that now resolve to this policy.
	ConditionProfilesTakenOver = "ProfilesTakenOver"
	// ReasonTakesOverProfiles is the condition's True reason and the Warning event's reason.
	ReasonTakesOverProfiles = "TakesOverProfiles"
	// ReasonNoneTakenOver is the condition's False reason.
	ReasonNoneTakenOver = "NoneTakenOver"

	problemTakeOver = "takeOver"
	// namesShown bounds the profile names a message lists; the count is always whole.
	namesShown = 5
)

// takeOver is what one reconcile found: the profiles with history whose pods moved to
// this policy, and how many of the policy's pods they concern.
type takeOver struct {
	profiles []string
	pods     int
}

// SetResolver gives the controller the admission resolver, which the take-over report
// replays for every enrolled pod. Without it the report is off.
func (c *Controller) SetResolver(r *resolve.Resolver) { c.resolver = r }

// findTakeOver replays resolution for the enrolled pods the policy can reach (every
// namespace for a ClusterResourcePolicy, its own for a ResourcePolicy) and lists the
// profiles with history that the pods it wins were accrued in under another policy: the
// profile with the same selector tuple but another discriminator.
func (c *Controller) findTakeOver(ctx context.Context, key types.NamespacedName) (takeOver, error) {
	snap := c.state.Get()
	if c.resolver == nil || snap.Config == nil {
		return takeOver{}, nil
	}
	self := identity.PolicyKey(c.kind, key.Namespace, key.Name)
	opts := []client.ListOption{client.HasLabels{ballastv1.ModeLabel}}
	if c.kind == ballastv1.KindResourcePolicy {
		opts = append(opts, client.InNamespace(key.Namespace))
	}
	// Both lists are read only: the cache's objects are used as they are (a copy of every
	// enrolled pod per reconcile was most of ballast-control's allocations at 20,000 pods),
	// and the pods are listed only when some profile was accrued under another policy.
	profiles := &ballastv1.WorkloadProfileList{}
	if err := c.client.List(ctx, profiles, client.UnsafeDisableDeepCopy); err != nil {
		return takeOver{}, fmt.Errorf("listing WorkloadProfiles: %w", err)
	}
	// Profiles with history, by selector tuple, accrued under any other policy.
	elsewhere := map[string][]string{}
	for i := range profiles.Items {
		wp := &profiles.Items[i]
		if !hasHistory(&wp.Status) || refKey(wp.Status.PolicyRef) == self {
			continue
		}
		sel := tupleKey(wp.Status.SelectorLabels)
		elsewhere[sel] = append(elsewhere[sel], wp.Name)
	}
	if len(elsewhere) == 0 {
		return takeOver{}, nil
	}
	pods := &corev1.PodList{}
	if err := c.client.List(ctx, pods, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return takeOver{}, fmt.Errorf("listing enrolled pods: %w", err)
	}
	found := map[string]bool{}
	var out takeOver
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !pod.DeletionTimestamp.IsZero() || !ballastv1.ValidMode(pod.Labels[ballastv1.ModeLabel]) {
			continue
		}
		b, err := c.resolver.Resolve(ctx, pod, pod.Namespace, snap.Config.IdentityLabels)
		if err != nil {
			return takeOver{}, err
		}
		if b.Policy == nil || b.Policy.Key() != self {
			continue
		}
		moved := false
		for _, name := range elsewhere[tupleKey(b.SelectorLabels)] {
			if name != b.ProfileName {
				found[name], moved = true, true
			}
		}
		if moved {
			out.pods++
		}
	}
	for name := range found {
		out.profiles = append(out.profiles, name)
	}
	sort.Strings(out.profiles)
	return out, nil
}

// reportTakeOver sets the condition and gauge, and logs and records an event once per
// change of the set of profiles taken over.
func (c *Controller) reportTakeOver(log logr.Logger, obj client.Object, conds *[]metav1.Condition, t takeOver) {
	key := client.ObjectKeyFromObject(obj)
	c.metrics.TakenOver.WithLabelValues(c.kind, key.Namespace, key.Name).Set(float64(len(t.profiles)))
	cond := metav1.Condition{Type: ConditionProfilesTakenOver, Status: metav1.ConditionFalse, Reason: ReasonNoneTakenOver,
		Message: "no profile with history has pods that moved to this policy", ObservedGeneration: obj.GetGeneration(),
		LastTransitionTime: metav1.NewTime(c.clock.Now())}
	if len(t.profiles) > 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonTakesOverProfiles, takeOverMessage(t)
	}
	meta.SetStatusCondition(conds, cond)
	if c.problems.changed(key, problemTakeOver, strings.Join(t.profiles, ",")) {
		logging.Warn(log, "policy takes over profiles accrued under another policy: their pods start new profiles from empty history",
			"profiles", len(t.profiles), "pods", t.pods, "names", shown(t.profiles))
		c.events.Publish(events.Event{Object: obj, Type: corev1.EventTypeWarning, Reason: ReasonTakesOverProfiles, Message: cond.Message})
	}
}

func takeOverMessage(t takeOver) string {
	return fmt.Sprintf("takes over %d existing profile(s) with history (%s): %d pod(s) accrued there now resolve to this policy "+
		"and start new profiles from empty history; the old profiles keep their samples until orphaned (orphanTTL)",
		len(t.profiles), shown(t.profiles), t.pods)
}

// shown lists up to namesShown names and says how many more there are.
func shown(names []string) string {
	if len(names) <= namesShown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:namesShown], ", "), len(names)-namesShown)
}

// hasHistory reports whether a profile holds samples: a profile without any has nothing
// to lose.
func hasHistory(st *ballastv1.WorkloadProfileStatus) bool {
	for _, u := range st.PodUsageStats {
		if u.Samples > 0 {
			return true
		}
	}
	for _, c := range st.Containers {
		for _, u := range c.UsageStats {
			if u.Samples > 0 {
				return true
			}
		}
	}
	return false
}

func refKey(r *ballastv1.PolicyRef) string {
	if r == nil {
		return ""
	}
	return identity.PolicyKey(r.Kind, r.Namespace, r.Name)
}

// tupleKey is a canonical string of a selector tuple.
func tupleKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
		b.WriteByte(0)
	}
	return b.String()
}
