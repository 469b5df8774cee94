package recommend

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// Messages of the Ready condition (SPEC §4.4).
const (
	MessageSamplesCollected = "All policy resources produced samples in the latest collection cycle"
	messageMissingSamples   = "No samples in the latest collection cycle for: "
)

// Input is everything one profile computation reads.
type Input struct {
	Now time.Time
	// Policy is the governing policy, compiled (so valid, with its resolve-time defaults
	// applied). nil computes like a policy without metrics under the defaults.
	Policy *policy.Compiled
	// SamplingInterval of the profile (SPEC §4.1); ≤ 0 means v1.DefaultPollInterval.
	SamplingInterval time.Duration
	// Retention is the effective retention window; ≤ 0 means v1.DefaultRetentionWindow.
	Retention time.Duration
	// Generation becomes the Ready condition's observedGeneration.
	Generation int64
	// Containers are the container series read from the store; names are unique.
	Containers []ContainerInput
	// PodSeries are the pod-level series by resource (emptyDir); informational only.
	PodSeries map[string]Distribution
	// OOMs are the profile's recent OOM kills, of any container.
	OOMs []OOMEvent
	// Previous are the containers of the current status; the usage stats of a series that
	// could not be read are carried over from it.
	Previous []v1.ContainerProfile
}

// ContainerInput is the history of one container name.
type ContainerInput struct {
	Name string
	// Series by resource. Every series with at least one sample gets a usageStats entry.
	Series map[string]Distribution
	// MemoryPeak is the optional memory.peak series; when it has samples, the max
	// aggregation of memory uses the larger of its max and the working-set max.
	MemoryPeak Distribution
	// ReadErrors holds the resources whose series could not be read; they count as not ready.
	ReadErrors map[string]error
}

// Pending is a considered (container, resource) that is not ready, with the reason.
type Pending struct {
	Container string
	Resource  string
	Reason    string // one of the NotReady* constants
	Message   string
}

// Result is the computed part of a WorkloadProfile status.
type Result struct {
	Containers     []v1.ContainerProfile // sorted by name; stale containers pruned
	PodUsageStats  []v1.UsageStats       // sorted by resource
	MeetsThreshold bool
	State          string
	Ready          metav1.Condition
	// Sufficient is the Sufficient condition: whether readiness is met and, if not, what is missing.
	Sufficient metav1.Condition
	// Pending lists the considered (container, resource) pairs that are not ready, sorted.
	Pending []Pending
	// OOMBumped names the containers whose memory recommendation an OOM bump raised.
	OOMBumped []string
}

// ApplyTo writes r into st; other status fields are left alone.
func (r Result) ApplyTo(st *v1.WorkloadProfileStatus) {
	st.Containers = r.Containers
	st.PodUsageStats = r.PodUsageStats
	st.MeetsThreshold = r.MeetsThreshold
	st.State = r.State
	st.Summary = Summary(r.Containers)
	meta.SetStatusCondition(&st.Conditions, r.Ready)
	meta.SetStatusCondition(&st.Conditions, r.Sufficient)
}

// Compute turns the series of one profile into its status (SPEC §4.2–§4.5, §5.1). It
// cannot fail: every policy value was parsed by policy.Compile, and a statistic that is
// not a finite number only makes its (container, resource) not ready.
func Compute(in Input) Result {
	pol := in.Policy
	if pol == nil {
		pol = emptyPolicy
	}
	params, metrics := pol.Readiness, pol.Metrics
	interval := in.SamplingInterval
	if interval <= 0 {
		interval = v1.DefaultPollInterval
	}
	retention := in.Retention
	if retention <= 0 {
		retention = v1.DefaultRetentionWindow
	}

	// Resources the policy uses, and the source each shows (the first metric naming it).
	sources := map[string]string{}
	for _, m := range metrics {
		if _, ok := sources[m.Resource]; !ok {
			sources[m.Resource] = m.Source
		}
	}
	policyResources := slices.Sorted(maps.Keys(sources))

	previous := map[string]v1.ContainerProfile{}
	for _, c := range in.Previous {
		previous[c.Name] = c
	}
	c := computer{in: in, params: params, metrics: metrics, sources: sources,
		resources: policyResources, retention: retention}
	var res Result
	inputs := slices.SortedFunc(slices.Values(in.Containers), func(a, b ContainerInput) int {
		return strings.Compare(a.Name, b.Name)
	})
	for _, ci := range inputs {
		prev, hasPrev := previous[ci.Name]
		cp, pending, bumped, ok := c.container(ci, prev, hasPrev)
		if !ok {
			continue
		}
		res.Containers = append(res.Containers, cp)
		res.Pending = append(res.Pending, pending...)
		if bumped {
			res.OOMBumped = append(res.OOMBumped, ci.Name)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(in.PodSeries)) {
		if d := in.PodSeries[r]; d != nil && d.Count() > 0 {
			res.PodUsageStats = append(res.PodUsageStats, UsageStats(r, sources[r], StatsOf(d, in.Now)))
		}
	}

	res.MeetsThreshold = len(res.Containers) > 0 && len(res.Pending) == 0
	res.State = v1.StateAccruing
	if res.MeetsThreshold {
		res.State = v1.StateSufficient
	}
	res.Ready = readyCondition(in, policyResources, interval)
	res.Sufficient = sufficientCondition(in, res, params)
	return res
}

// BasisOOM starts the basis of a memory value an OOM kill raised.
const BasisOOM = "raised by an OOM kill"

var errUnreadable = errors.New("series unreadable")

// emptyPolicy is what a nil Input.Policy computes as: no metrics, resolve-time defaults.
var emptyPolicy = func() *policy.Compiled {
	c, err := policy.Compile(v1.KindClusterResourcePolicy, "", "", 0, v1.ResourcePolicySpec{}, policy.Floors{})
	if err != nil {
		panic("recommend: the empty policy does not compile: " + err.Error())
	}
	return c
}()

// computer holds what every container of one computation shares.
type computer struct {
	in        Input
	params    policy.Readiness
	metrics   []policy.Metric
	sources   map[string]string
	resources []string // sorted resources named by the policy
	retention time.Duration
}

// container computes one container's status entry. ok is false when the container is not
// considered (SPEC §4.5).
func (c computer) container(ci ContainerInput, prev v1.ContainerProfile, hasPrev bool) (
	cp v1.ContainerProfile, pending []Pending, bumped bool, ok bool) {
	cp, stats, ok := c.observe(ci, prev, hasPrev)
	if !ok {
		return v1.ContainerProfile{}, nil, false, false
	}
	recs := map[string]v1.Recommendation{}
	for _, r := range c.resources {
		s, has := stats[r]
		var readErr error
		if hasKey(ci.ReadErrors, r) {
			readErr = ci.ReadErrors[r]
			if readErr == nil {
				readErr = errUnreadable
			}
		}
		gap := Gap(r, s, has, readErr, c.params)
		cp.Readiness = append(cp.Readiness, gap)
		a, p, b := c.recommend(ci, r, stats)
		if p != nil {
			if gap.Missing != "" {
				p.Message = gap.Missing
			}
			pending = append(pending, *p)
			continue
		}
		bumped = bumped || b
		if !a.IsZero() {
			recs[r] = a.Recommendation(r)
		}
	}
	if len(recs) > 0 {
		cp.Recommendations = recs
	}
	return cp, pending, bumped, true
}

// observe computes the statistics of a container's readable series and its usageStats and
// lastSeen. A series that could not be read keeps its previous usageStats entry. ok is
// false when the container has no retained sample (and no previous entry to keep while its
// series are unreadable), or when its newest sample is older than the retention window.
func (c computer) observe(ci ContainerInput, prev v1.ContainerProfile, hasPrev bool) (
	cp v1.ContainerProfile, stats map[string]Stats, ok bool) {
	stats = map[string]Stats{}
	var lastSeen time.Time
	for r, d := range ci.Series {
		if hasKey(ci.ReadErrors, r) || d == nil || d.Count() <= 0 {
			continue
		}
		stats[r] = StatsOf(d, c.in.Now)
		if t := d.LastSeen(); t.After(lastSeen) {
			lastSeen = t
		}
	}
	cp.Name = ci.Name
	for r, s := range stats {
		cp.UsageStats = append(cp.UsageStats, UsageStats(r, c.sources[r], s))
	}
	carried := false
	if hasPrev && len(ci.ReadErrors) > 0 {
		carried = true
		for _, u := range prev.UsageStats {
			if hasKey(ci.ReadErrors, u.Resource) {
				cp.UsageStats = append(cp.UsageStats, u)
			}
		}
		if lastSeen.IsZero() && prev.LastSeen != nil {
			lastSeen = prev.LastSeen.Time
		}
	}
	switch {
	case len(stats) == 0 && !carried:
		return v1.ContainerProfile{}, nil, false
	case !lastSeen.IsZero() && c.in.Now.Sub(lastSeen) > c.retention:
		return v1.ContainerProfile{}, nil, false
	case !lastSeen.IsZero():
		t := metav1.NewTime(lastSeen)
		cp.LastSeen = &t
	}
	slices.SortFunc(cp.UsageStats, func(a, b v1.UsageStats) int { return strings.Compare(a.Resource, b.Resource) })
	return cp, stats, true
}

// recommend computes the recommendation of one (container, resource) named by the policy,
// or why it is not ready. bumped reports that an OOM bump raised it.
func (c computer) recommend(ci ContainerInput, r string, stats map[string]Stats) (
	a Amounts, notReady *Pending, bumped bool) {
	pend := func(reason, msg string) (Amounts, *Pending, bool) {
		return Amounts{}, &Pending{Container: ci.Name, Resource: r, Reason: reason, Message: msg}, false
	}
	s, has := stats[r]
	switch {
	case hasKey(ci.ReadErrors, r):
		return pend(NotReadyReadError, fmt.Sprintf("reading %s series: %v", r, ci.ReadErrors[r]))
	case !has:
		return pend(NotReadyNoSeries, "no retained samples")
	}
	if reason, msg, ready := CheckReady(r, s, c.params); !ready {
		return pend(reason, msg)
	}
	if r == ResourceMemory && ci.MemoryPeak != nil && ci.MemoryPeak.Count() > 0 {
		s.Max = max(s.Max, ci.MemoryPeak.Max())
	}
	a, err := Recommend(r, s, c.metrics)
	if err != nil {
		// Only a non-finite statistic gets here, which a healthy store never yields.
		return pend(NotReadyInvalidStatistic, err.Error())
	}
	if r != ResourceMemory {
		return a, nil, false
	}
	var ooms []OOMEvent
	for _, e := range c.in.OOMs {
		if e.Container == ci.Name {
			ooms = append(ooms, e)
		}
	}
	a, bump, bumped := ApplyOOMBump(a, ooms, c.in.Now, c.retention)
	if bumped {
		basis := fmt.Sprintf("%s to max(peak × 1.2, peak + 100Mi) = %s", BasisOOM, FormatValue(r, bump))
		if a.HasRequest && a.Request == bump {
			a.RequestBasis = basis
		}
		if a.HasLimit && a.Limit == bump {
			a.LimitBasis = basis
		}
	}
	return a.roundUp(), nil, bumped
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// readyCondition is the collection-health condition: every resource the policy names has
// a sample from some container no older than two sampling intervals.
func readyCondition(in Input, resources []string, interval time.Duration) metav1.Condition {
	var missing []string
	for _, r := range resources {
		fresh := false
		for _, ci := range in.Containers {
			d := ci.Series[r]
			if d == nil || hasKey(ci.ReadErrors, r) || d.Count() <= 0 {
				continue
			}
			if in.Now.Sub(d.LastSeen()) <= 2*interval {
				fresh = true
				break
			}
		}
		if !fresh {
			missing = append(missing, r)
		}
	}
	cond := metav1.Condition{
		Type:               v1.ConditionReady,
		Status:             metav1.ConditionTrue,
		ObservedGeneration: in.Generation,
		LastTransitionTime: metav1.NewTime(in.Now),
		Reason:             v1.ReasonSamplesCollected,
		Message:            MessageSamplesCollected,
	}
	if len(missing) > 0 {
		cond.Status = metav1.ConditionFalse
		cond.Reason = v1.ReasonMissingSamples
		cond.Message = messageMissingSamples + strings.Join(missing, ", ")
	}
	return cond
}

// PolicyInvalidCondition is the Ready condition of a profile whose policy is invalid
// (SPEC §4.4): policy is the reference as written in annotations ("name" or
// "namespace/name"), reason the policy's Valid reason, detail its message (may be empty).
func PolicyInvalidCondition(policy, reason, detail string, generation int64, now time.Time) metav1.Condition {
	msg := fmt.Sprintf("Policy %s is invalid: %s", policy, reason)
	if detail != "" {
		msg += ": " + detail
	}
	return metav1.Condition{
		Type:               v1.ConditionReady,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
		Reason:             v1.ReasonPolicyInvalid,
		Message:            msg,
	}
}
