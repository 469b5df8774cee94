package profiles

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/recommend/feed"
)

// samplingInterval is §4.1's cadence from the policy's sources.
func (c *Controller) samplingInterval(ctx context.Context, spec *ballastv1.ResourcePolicySpec) time.Duration {
	list := &ballastv1.MetricsSourceList{}
	if err := c.client.List(ctx, list); err != nil {
		return ballastv1.DefaultPollInterval
	}
	sources := make(map[string]policy.Source, len(list.Items))
	for _, s := range list.Items {
		sources[s.Name] = policy.Source{Type: s.Spec.Type, PollInterval: s.Spec.Config.PollInterval}
	}
	return policy.SamplingInterval(spec.Metrics, sources)
}

// compute fills the statistics part of next and returns when to recompute. Profiles
// without a usable policy keep accruing in the store but get no statistics (§4.5).
func (c *Controller) compute(ctx context.Context, wp *ballastv1.WorkloadProfile, next *ballastv1.WorkloadProfileStatus,
	snap config.Snapshot, now time.Time) (time.Duration, error) {
	ref := wp.Status.PolicyRef
	if ref == nil {
		return 0, nil
	}
	policyName := ballastv1.PolicyRefValue(ref.Namespace, ref.Name)
	// Through the resolver's memo (read from the cache, compiled once per generation and
	// floors), as admission, enrollment and resize load it.
	compiled, err := c.resolver.Policy(ctx, *ref)
	if err != nil {
		var verr *policy.ValidationError
		if errors.As(err, &verr) {
			meta.SetStatusCondition(&next.Conditions, recommend.PolicyInvalidCondition(policyName, verr.Reason, verr.Message, wp.Generation, now))
			c.policyProblem(ctx, wp, policyName, verr.Reason, verr.Message)
			return 0, nil
		}
		return 0, err
	}
	if compiled == nil {
		return 0, nil // the policy is gone
	}
	interval := c.samplingInterval(ctx, &compiled.Spec)
	if next.MeasurementHash == "" {
		return interval, nil
	}
	retention := ballastv1.DefaultRetentionWindow
	if snap.Config != nil {
		retention, _ = ballastv1.RetentionWindow(*snap.Config)
	}
	stored, err := c.store.Read(ctx, next.MeasurementHash, now, retention)
	if err != nil {
		return c.retry, fmt.Errorf("reading store for %s: %w", wp.Name, err)
	}
	series := feed.Of(stored.Series, stored.OOMs, stored.Nodes) // the store's data, shaped for recommend
	res := recommend.Compute(recommend.Input{
		Now: now, Policy: compiled, SamplingInterval: c.collectionInterval(wp.Name, interval, series.Fallback), Retention: retention, Generation: wp.Generation,
		Containers: series.Containers, PodSeries: series.Pod, OOMs: series.OOMs, Previous: wp.Status.Containers,
	})
	c.problems.changed(policyName, "")
	if keep, epoch := c.survivesReset(ctx, &wp.Status, res, now); keep {
		if !meta.IsStatusConditionTrue(wp.Status.Conditions, ballastv1.ConditionStale) {
			logf.FromContext(ctx).Info("the store lost this profile's history: keeping its last recommendations, marked Stale, while it re-accrues",
				"profile", wp.Name, "policy", policyName, "storeEpoch", epoch.UTC().Format(time.RFC3339))
		}
		keepThroughReset(&wp.Status, next, res, epoch, wp.Generation, now)
		c.metrics.setState(wp.Name, StateReady)
		return interval, nil
	}
	if clearStale(next) {
		logf.FromContext(ctx).Info("profile history re-accrued after a store reset: Stale cleared", "profile", wp.Name, "policy", policyName)
	}
	wasMet := wp.Status.MeetsThreshold
	outliers := boundOutliers(&res, series.Nodes)
	res.ApplyTo(next)
	setBounded(ctx, wp, next, outliers, now)
	c.applyFallback(wp.Name, next, series.Fallback, wp.Generation, now)
	switch {
	case !wasMet && next.MeetsThreshold:
		c.metrics.ThresholdMet.WithLabelValues(policyName, wp.Name).Inc()
		logf.FromContext(ctx).Info("profile is Sufficient", "profile", wp.Name, "policy", policyName,
			"readiness", res.Sufficient.Message)
	case wasMet && !next.MeetsThreshold:
		logf.FromContext(ctx).Info("profile is Accruing again", "profile", wp.Name, "policy", policyName,
			"missing", res.Sufficient.Message)
	}
	state := StateAccruing
	if next.MeetsThreshold {
		state = StateReady
	}
	c.metrics.setState(wp.Name, state)
	return interval, nil
}

// policyProblem logs, once per change of the problem per policy (not per profile or pod,
// SPEC §11.4), that the profile's policy cannot be computed.
func (c *Controller) policyProblem(ctx context.Context, wp *ballastv1.WorkloadProfile, policyName, reason, msg string) {
	if c.problems.changed(policyName, reason+": "+msg) {
		logr.FromContextOrDiscard(ctx).Error(nil, "policy cannot be computed: its profiles keep their last recommendations until it is fixed",
			"policy", policyName, "reason", reason, "message", msg, "generation", wp.Generation)
	}
}
