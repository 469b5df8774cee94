package sizing

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Bound reasons. A value the bounds change or hold back is recorded as a BoundNote with
// one of them; they become log keys, the bounded-* metric's reason and, when the whole pod
// is left unchanged, the skip reason (ballast.apply.skipped{reason}).
const (
	// ReasonOutOfBounds: a recommendation outside the allowed range (policy
	// minAllowed/maxAllowed, the largest node's allocatable) was capped into it.
	ReasonOutOfBounds = "out_of_bounds"
	// ReasonLimitRange: a value was clamped into, or held back by, a LimitRange of the
	// pod's namespace (min, max, maxLimitRequestRatio; type Container or Pod).
	ReasonLimitRange = "limit_range"
	// ReasonPodResources: a value was held back because the pod-level spec.resources
	// could not hold the containers' aggregate.
	ReasonPodResources = "pod_resources"
	// ReasonQuota: a raise was held back because a ResourceQuota of the namespace has no
	// headroom (hard − used) for it.
	ReasonQuota = "quota"
)

// Bounds are what a sized pod must still satisfy beyond its own request ≤ limit: the
// admission checks of the API server (the namespace's LimitRanges, the pod's own
// spec.resources, the namespace's ResourceQuotas) and the trust bounds on a profile's
// values (Allowed). The zero value bounds nothing. Callers read the objects from their
// caches; the calculator only reads them.
type Bounds struct {
	// LimitRanges of the pod's namespace. The webhook runs after the LimitRanger plugin's
	// mutation (in-tree mutating plugins run before mutating webhooks), so the pod it
	// sees already carries the defaults; the LimitRanger's validation runs on the patched
	// pod, which is what these bounds keep valid.
	LimitRanges []corev1.LimitRange
	// Quotas of the pod's namespace, with status.hard and status.used (headroom =
	// hard − used). A quota's scopes are not evaluated: every quota counts (stricter).
	Quotas []corev1.ResourceQuota
	// Allowed caps every recommended value (request and limit) of a resource.
	Allowed map[corev1.ResourceName]Range
}

// Range is the allowed interval of one resource's recommended values, in Units. MinFrom
// and MaxFrom say where a bound comes from, for messages ("policy maxAllowed", "largest
// node allocatable").
type Range struct {
	Min, Max         Units
	HasMin, HasMax   bool
	MinFrom, MaxFrom string
}

// WithMax returns r with max lowered to u when u is below the current max (or none).
func (r Range) WithMax(u Units, from string) Range {
	if !r.HasMax || u < r.Max {
		r.Max, r.HasMax, r.MaxFrom = u, true, from
	}
	return r
}

// WithMin returns r with min raised to u when u is above the current min (or none).
func (r Range) WithMin(u Units, from string) Range {
	if !r.HasMin || u > r.Min {
		r.Min, r.HasMin, r.MinFrom = u, true, from
	}
	return r
}

// empty reports whether b bounds nothing.
func (b Bounds) empty() bool {
	return len(b.LimitRanges) == 0 && len(b.Quotas) == 0 && len(b.Allowed) == 0
}

// BoundNote records one value the bounds changed or held back.
type BoundNote struct {
	Container string // empty for the whole pod
	Resource  corev1.ResourceName
	Field     Field
	Reason    string
	// From is the value before the bound (the recommendation or the planned value);
	// To what is written instead (the current value when the change was held back).
	From, To Units
	// Held is true when the change was dropped (the value stays as the author wrote it).
	Held bool
	// Why names the bound: "LimitRange lr: min 256Mi", "quota q: headroom 1".
	Why string
}

// String renders the note for logs, annotations and events:
// "app memory request 192Mi→256Mi (limit_range: LimitRange lr min 256Mi)".
func (n BoundNote) String() string {
	who := n.Container
	if who == "" {
		who = "pod"
	}
	what := fmt.Sprintf("%s→%s", n.From.String(n.Resource), n.To.String(n.Resource))
	if n.Held {
		what = fmt.Sprintf("%s held at %s", n.From.String(n.Resource), n.To.String(n.Resource))
	}
	return fmt.Sprintf("%s %s %s %s (%s: %s)", who, n.Resource, n.Field, what, n.Reason, n.Why)
}

// Summary renders notes in a fixed order, joined by "; " (the bounded annotation).
func Summary(notes []BoundNote) string {
	parts := make([]string, 0, len(notes))
	for _, n := range notes {
		parts = append(parts, n.String())
	}
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), "; ")
}

// capRecommendations returns recs with every value capped into bounds.Allowed, and a note
// per capped value. recs is not modified.
func capRecommendations(recs Recommendations, allowed map[corev1.ResourceName]Range) (Recommendations, []BoundNote) {
	if len(allowed) == 0 {
		return recs, nil
	}
	var notes []BoundNote
	out := make(Recommendations, len(recs))
	for name, byRes := range recs {
		capped := make(map[corev1.ResourceName]ResourceRecommendation, len(byRes))
		for res, r := range byRes {
			rg, ok := allowed[res]
			if ok {
				if r.HasRequest {
					r.Request = capInto(rg, r.Request, func(to Units, why string) {
						notes = append(notes, BoundNote{Container: name, Resource: res, Field: Request,
							Reason: ReasonOutOfBounds, From: r.Request, To: to, Why: why})
					})
				}
				if r.HasLimit {
					r.Limit = capInto(rg, r.Limit, func(to Units, why string) {
						notes = append(notes, BoundNote{Container: name, Resource: res, Field: Limit,
							Reason: ReasonOutOfBounds, From: r.Limit, To: to, Why: why})
					})
				}
			}
			capped[res] = r
		}
		out[name] = capped
	}
	return out, notes
}

func capInto(rg Range, u Units, note func(to Units, why string)) Units {
	switch {
	case rg.HasMax && u > rg.Max:
		note(rg.Max, "above "+rg.MaxFrom)
		return rg.Max
	case rg.HasMin && u < rg.Min:
		note(rg.Min, "below "+rg.MinFrom)
		return rg.Min
	}
	return u
}
