package profiles

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/recommend"
)

// DefaultStatusRefresh is how often, at most, a profile's status is written when only its
// usage statistics (and recommendations within RecommendationTolerance) moved
// (ballast-control --status-refresh-interval).
const DefaultStatusRefresh = time.Minute

// RecommendationTolerance is the relative change of a recommended request or limit, against
// the value in the stored status, above which the status is written at once. Smaller moves
// wait for the refresh interval. 1 % is a tenth of the default resize threshold (10 %,
// SPEC §8.3), at or below the rendering granularity of small values (1m of cpu under 100m,
// 1Mi of memory under 100Mi), and far below the headroom factors and the statistical noise
// of the aggregations; it is measured against the stored value, so drift cannot accumulate
// past it.
const RecommendationTolerance = 0.01

// Why a status is or is not written (ShouldWriteStatus).
const (
	WriteUnchanged = "unchanged"  // nothing but lastUpdated differs: no write
	WriteEveryTime = "no-refresh" // refresh interval 0: every material change is written
	WriteFirst     = "first"      // the stored status has never been written by a computation
	WriteRefresh   = "refresh"    // held changes, and the refresh interval has passed
	WriteHeld      = "held"       // only statistics moved, within the refresh interval: no write
)

// ShouldWriteStatus decides whether next, a freshly computed status, is to be written over
// old, the stored one. lastWrite is when this profile's status was last written (zero:
// never; see LastStatusWrite), refresh the --status-refresh-interval. It writes at once when
// something a user or another controller acts on changed (urgentChange: state,
// meetsThreshold, counts, resize summary, fallback coverage, conditions, the set of
// containers, series and readiness gates, a recommendation appearing, disappearing or
// moving by more than RecommendationTolerance); otherwise, when only usage statistics and
// small recommendation moves differ, at most once per refresh interval. why names the
// rule that decided (the Write* constants, or the urgent field). Pure: the scale bench
// calls it to count the writes the controller would make.
func ShouldWriteStatus(old, next *ballastv1.WorkloadProfileStatus, lastWrite, now time.Time, refresh time.Duration) (write bool, why string) {
	if equality.Semantic.DeepEqual(material(old), material(next)) {
		return false, WriteUnchanged
	}
	if refresh <= 0 {
		return true, WriteEveryTime
	}
	if what := urgentChange(old, next); what != "" {
		return true, what
	}
	switch {
	case lastWrite.IsZero():
		return true, WriteFirst
	case now.Sub(lastWrite) >= refresh:
		return true, WriteRefresh
	}
	return false, WriteHeld
}

// LastStatusWrite is when the statistics in st were computed and written: the newest
// usageStats lastUpdated (zero when st carries none). It survives restarts and leader
// changes, since every write of this controller stamps each series' lastUpdated.
func LastStatusWrite(st *ballastv1.WorkloadProfileStatus) time.Time {
	var last time.Time
	stamp := func(us []ballastv1.UsageStats) {
		for _, u := range us {
			if u.LastUpdated != nil && u.LastUpdated.After(last) {
				last = u.LastUpdated.Time
			}
		}
	}
	for _, c := range st.Containers {
		stamp(c.UsageStats)
	}
	stamp(st.PodUsageStats)
	return last
}

// urgentChange names the first field whose change is written at once, "" when only
// statistics-like fields differ. The summary is not compared: it is rendered from the
// recommendations (recommend.Summary), which are compared with the tolerance, and held
// together with them.
func urgentChange(old, next *ballastv1.WorkloadProfileStatus) string {
	switch {
	case old.State != next.State:
		return "state"
	case old.MeetsThreshold != next.MeetsThreshold:
		return "meetsThreshold"
	case old.ActiveWorkloads != next.ActiveWorkloads:
		return "activeWorkloads"
	case old.ActivePods != next.ActivePods:
		return "activePods"
	case !equality.Semantic.DeepEqual(old.Resize, next.Resize):
		return "resize"
	case fallbackChanged(old.Fallback, next.Fallback):
		return "fallback"
	}
	if what := conditionsChanged(old.Conditions, next.Conditions); what != "" {
		return what
	}
	if !slices.Equal(statResources(old.PodUsageStats), statResources(next.PodUsageStats)) {
		return "podUsageStats"
	}
	return containersChanged(old.Containers, next.Containers)
}

// fallbackChanged: status.fallback appeared or went, or its coverage (uncovered pods) or
// resolution changed. Its sample count and share move with every sample: statistics.
func fallbackChanged(old, next *ballastv1.FallbackStatus) bool {
	if (old == nil) != (next == nil) {
		return true
	}
	if old == nil {
		return false
	}
	return old.UncoveredPods != next.UncoveredPods || !equality.Semantic.DeepEqual(old.Resolution, next.Resolution)
}

// countingMessage reports whether a condition's message carries counts that move with every
// sample (the Accruing Sufficient condition's "samples 120/250, span …", Stale's "n samples
// so far"); such messages are statistics. Every other message is compared.
func countingMessage(c metav1.Condition) bool {
	switch c.Type {
	case ballastv1.ConditionSufficient:
		return c.Status != metav1.ConditionTrue
	case ballastv1.ConditionStale:
		return true
	}
	return false
}

// conditionsChanged names the condition whose presence, status, reason, observed generation
// or (non-counting) message changed.
func conditionsChanged(old, next []metav1.Condition) string {
	if len(old) != len(next) {
		return "conditions"
	}
	byType := make(map[string]metav1.Condition, len(old))
	for _, c := range old {
		byType[c.Type] = c
	}
	for _, n := range next {
		o, ok := byType[n.Type]
		switch {
		case !ok:
			return "conditions"
		case o.Status != n.Status, o.Reason != n.Reason, o.ObservedGeneration != n.ObservedGeneration:
			return "condition " + n.Type
		case o.Message != n.Message && !countingMessage(n):
			return "condition " + n.Type
		}
	}
	return ""
}

func statResources(us []ballastv1.UsageStats) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, u.Resource+"/"+u.Source)
	}
	slices.Sort(out)
	return out
}

// containersChanged compares what is acted on per container: the set of containers and of
// their series (resource and source), each readiness gate's verdict and source error, and
// the recommendations (containerRecsChanged). Sample counts, spans, percentiles, lastSeen
// and the bases' arithmetic are statistics.
func containersChanged(old, next []ballastv1.ContainerProfile) string {
	if len(old) != len(next) {
		return "containers"
	}
	byName := make(map[string]*ballastv1.ContainerProfile, len(old))
	for i := range old {
		byName[old[i].Name] = &old[i]
	}
	for i := range next {
		n := &next[i]
		o, ok := byName[n.Name]
		if !ok {
			return "containers"
		}
		if !slices.Equal(statResources(o.UsageStats), statResources(n.UsageStats)) {
			return "series of " + n.Name
		}
		if readinessChanged(o.Readiness, n.Readiness) {
			return "readiness of " + n.Name
		}
		if r := containerRecsChanged(o.Recommendations, n.Recommendations); r != "" {
			return "recommendation " + n.Name + " " + r
		}
	}
	return ""
}

func readinessChanged(old, next []ballastv1.ResourceReadiness) bool {
	if len(old) != len(next) {
		return true
	}
	byRes := make(map[string]ballastv1.ResourceReadiness, len(old))
	for _, g := range old {
		byRes[g.Resource] = g
	}
	for _, n := range next {
		o, ok := byRes[n.Resource]
		if !ok || o.Ready != n.Ready || o.SourceError != n.SourceError {
			return true
		}
	}
	return false
}

// containerRecsChanged names the "resource field" of the first recommendation that
// appeared, disappeared, moved by more than RecommendationTolerance, or started or stopped
// being an OOM kill's raise.
func containerRecsChanged(old, next map[string]ballastv1.Recommendation) string {
	if !slices.Equal(slices.Sorted(maps.Keys(old)), slices.Sorted(maps.Keys(next))) {
		return "set"
	}
	for _, r := range slices.Sorted(maps.Keys(next)) {
		o, n := old[r], next[r]
		switch {
		case valueChanged(o.Request, n.Request):
			return r + " request"
		case valueChanged(o.Limit, n.Limit):
			return r + " limit"
		case oomRaised(o.RequestBasis) != oomRaised(n.RequestBasis), oomRaised(o.LimitBasis) != oomRaised(n.LimitBasis):
			return r + " OOM raise"
		}
	}
	return ""
}

func oomRaised(basis string) bool { return strings.HasPrefix(basis, recommend.BasisOOM) }

// valueChanged: a recommended value appeared or disappeared, or moved by more than
// RecommendationTolerance of the stored value (compared as quantities; a value that does
// not parse is compared as text).
func valueChanged(old, next string) bool {
	if old == next {
		return false
	}
	if old == "" || next == "" {
		return true
	}
	o, err1 := resource.ParseQuantity(old)
	n, err2 := resource.ParseQuantity(next)
	if err1 != nil || err2 != nil {
		return true
	}
	if o.Cmp(n) == 0 {
		return false
	}
	ov, nv := o.AsApproximateFloat64(), n.AsApproximateFloat64()
	if ov == 0 {
		return true
	}
	return math.Abs(nv-ov) > RecommendationTolerance*math.Abs(ov)
}
