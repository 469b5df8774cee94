package profiles

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/recommend"
)

// EpochStore is implemented by a Store that can tell when its data began
// (store.ProfileReader): the store epoch, written at first use and missing after a wipe.
type EpochStore interface {
	StoreEpoch(ctx context.Context, now time.Time) (time.Time, error)
}

// survivesReset decides whether res, computed from the store, is to be replaced by the
// profile's last good recommendations because the store lost the history behind them
// (SPEC §4.4, condition Stale, reason StoreReset). It holds when the profile was
// Sufficient, the new computation is not, it now sees less than half the samples its status
// showed, and its status shows samples older than the store epoch (a store that lost its
// data has an epoch newer than the history; a pre-epoch store being upgraded still has its
// samples). Once Stale, the profile stays so until the store's own history is Sufficient.
func (c *Controller) survivesReset(ctx context.Context, prev *ballastv1.WorkloadProfileStatus, res recommend.Result, now time.Time) (bool, time.Time) {
	if res.MeetsThreshold {
		return false, time.Time{}
	}
	es, hasEpoch := c.store.(EpochStore)
	if cond := meta.FindStatusCondition(prev.Conditions, ballastv1.ConditionStale); cond != nil && cond.Status == metav1.ConditionTrue {
		if hasEpoch {
			if epoch, err := es.StoreEpoch(ctx, now); err == nil {
				return true, epoch
			}
		}
		return true, cond.LastTransitionTime.Time
	}
	if prev.State != ballastv1.StateSufficient || !hasRecommendations(prev.Containers) {
		return false, time.Time{}
	}
	before, after := sampleCount(prev.Containers), sampleCount(res.Containers)
	if before == 0 || 2*after >= before {
		return false, time.Time{}
	}
	if !hasEpoch {
		return false, time.Time{}
	}
	epoch, err := es.StoreEpoch(ctx, now)
	if err != nil {
		// The store answered the read but not the epoch: keep serving what the status holds
		// rather than dropping every pod to unsized.
		logf.FromContext(ctx).Error(err, "reading the store epoch; treating lost history as a store reset")
		return true, now
	}
	oldest, ok := oldestSample(prev.Containers)
	if !ok || !oldest.Before(epoch) {
		return false, time.Time{}
	}
	return true, epoch
}

// keepThroughReset writes the previous status's recommendations, statistics and state into
// next, keeps the fresh Ready condition (collection health is current) and sets Stale.
func keepThroughReset(prev, next *ballastv1.WorkloadProfileStatus, res recommend.Result, epoch time.Time, gen int64, now time.Time) {
	kept := prev.DeepCopy()
	next.Containers = kept.Containers
	next.PodUsageStats = kept.PodUsageStats
	next.MeetsThreshold = prev.MeetsThreshold
	next.State = prev.State
	next.Summary = prev.Summary
	meta.SetStatusCondition(&next.Conditions, res.Ready)
	samples := sampleCount(res.Containers)
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{
		Type: ballastv1.ConditionStale, Status: metav1.ConditionTrue, Reason: ballastv1.ReasonStoreReset,
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now),
		Message: fmt.Sprintf("The store lost this profile's history (store epoch %s); the last recommendations are kept "+
			"until the history re-accrues (%d samples so far)", epoch.UTC().Format(time.RFC3339), samples),
	})
}

// clearStale removes the Stale condition once the store's own history is Sufficient.
func clearStale(next *ballastv1.WorkloadProfileStatus) bool {
	return meta.RemoveStatusCondition(&next.Conditions, ballastv1.ConditionStale)
}

func hasRecommendations(cs []ballastv1.ContainerProfile) bool {
	for _, c := range cs {
		if len(c.Recommendations) > 0 {
			return true
		}
	}
	return false
}

func sampleCount(cs []ballastv1.ContainerProfile) int64 {
	var n int64
	for _, c := range cs {
		for _, u := range c.UsageStats {
			n += u.Samples
		}
	}
	return n
}

// oldestSample is the time of the oldest sample a status implies: a container's lastSeen
// less the longest timeSpan of its series.
func oldestSample(cs []ballastv1.ContainerProfile) (time.Time, bool) {
	var oldest time.Time
	for _, c := range cs {
		if c.LastSeen == nil {
			continue
		}
		var span time.Duration
		for _, u := range c.UsageStats {
			if d, err := time.ParseDuration(u.TimeSpan); err == nil && d > span {
				span = d
			}
		}
		if t := c.LastSeen.Add(-span); oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	return oldest, !oldest.IsZero()
}
