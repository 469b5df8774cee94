package profiles

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/fallback"
	"github.com/ballastk8s/ballast/pkg/recommend/feed"
)

// SetFallback gives the controller the fallback source's view of agent coverage; without
// it profiles show only the fallback share their store history holds.
func (c *Controller) SetFallback(v fallback.View) { c.fallback = v }

// collectionInterval is the cadence the Ready condition (samples in the latest collection
// cycle, SPEC §4.4) expects: the sampling interval, or, while some of the profile's pods are
// measured through metrics.k8s.io, that API's resolution and the fallback's polling
// interval if longer, so a fallback-fed profile is not reported as missing samples between
// two readings. The readiness gates (samples, span, CV) are unchanged.
func (c *Controller) collectionInterval(name string, interval time.Duration, share feed.FallbackShare) time.Duration {
	if c.fallback == nil || c.fallback.Coverage(name).UncoveredPods == 0 {
		return interval
	}
	return max(interval, share.Resolution, c.fallback.Interval())
}

// applyFallback writes status.fallback and the AgentCoverage condition: which share of the
// retained samples came through metrics.k8s.io and at what resolution, and, while some
// bound pods run on nodes without a live agent, whether anything measures them.
func (c *Controller) applyFallback(name string, next *ballastv1.WorkloadProfileStatus, share feed.FallbackShare, gen int64, now time.Time) {
	var cov fallback.ProfileCoverage
	if c.fallback != nil {
		cov = c.fallback.Coverage(name)
	}
	if share.FallbackSamples == 0 && cov.UncoveredPods == 0 {
		next.Fallback = nil
	} else {
		fs := &ballastv1.FallbackStatus{Samples: share.FallbackSamples, UncoveredPods: int32(cov.UncoveredPods)}
		if share.Samples > 0 {
			fs.Share = fmt.Sprintf("%.1f%%", 100*float64(share.FallbackSamples)/float64(share.Samples))
		}
		if share.Resolution > 0 {
			fs.Resolution = &metav1.Duration{Duration: share.Resolution}
		}
		next.Fallback = fs
	}
	if cov.UncoveredPods == 0 {
		meta.RemoveStatusCondition(&next.Conditions, ballastv1.ConditionAgentCoverage)
		return
	}
	cond := metav1.Condition{Type: ballastv1.ConditionAgentCoverage, Status: metav1.ConditionFalse, ObservedGeneration: gen,
		LastTransitionTime: metav1.NewTime(now)}
	pods := fmt.Sprintf("%d pod(s) on nodes without a live node agent", cov.UncoveredPods)
	switch cov.API {
	case fallback.APIUnavailable:
		cond.Reason = ballastv1.ReasonMetricsAPIUnavailable
		cond.Message = pods + " are not measured: " + cov.Message
	case fallback.APIDisabled:
		cond.Reason = ballastv1.ReasonFallbackDisabled
		cond.Message = pods + " are not measured: the metrics.k8s.io fallback is turned off (fallback.enabled)"
	default:
		cond.Reason = ballastv1.ReasonMeasuredThroughMetricsAPI
		cond.Message = pods + " are measured through metrics.k8s.io at its resolution (cpu, memory); "
		switch {
		case cov.EphemeralStorage:
			cond.Message += "their ephemeral-storage through the kubelet Summary API (node proxy)"
		case cov.EphemeralProblem != "":
			cond.Message += "their ephemeral-storage is not measured: " + cov.EphemeralProblem
		default:
			cond.Message += "their ephemeral-storage is not measured (fallback.ephemeralStorage is off)"
		}
	}
	meta.SetStatusCondition(&next.Conditions, cond)
}
