package profiles

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
)

// setOrphaned maintains the Orphaned condition (SPEC §6.6); lastTransitionTime moves only
// on flips.
func setOrphaned(st *ballastv1.WorkloadProfileStatus, now time.Time) {
	if st.ActivePods > 0 {
		meta.RemoveStatusCondition(&st.Conditions, ballastv1.ConditionOrphaned)
		return
	}
	if c := meta.FindStatusCondition(st.Conditions, ballastv1.ConditionOrphaned); c != nil && c.Status == metav1.ConditionTrue {
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ballastv1.ConditionOrphaned,
		Status: metav1.ConditionTrue, Reason: ballastv1.ReasonNoActiveWorkloads,
		Message: "No active workloads for this profile", LastTransitionTime: metav1.NewTime(now)})
}

// expire deletes a profile orphaned for orphanTTL (SPEC §6.6) and reports whether it did;
// otherwise it returns how long until the TTL runs out (0: no TTL pending). Without a
// BallastConfig, or with an unparseable TTL, nothing is deleted.
func (c *Controller) expire(ctx context.Context, wp *ballastv1.WorkloadProfile, next *ballastv1.WorkloadProfileStatus,
	snap config.Snapshot, now time.Time) (bool, time.Duration, error) {
	cond := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionOrphaned)
	if cond == nil || cond.Status != metav1.ConditionTrue || snap.Config == nil {
		return false, 0, nil
	}
	ttl, ok := ballastv1.OrphanTTL(*snap.Config)
	if !ok {
		return false, 0, nil
	}
	age := now.Sub(cond.LastTransitionTime.Time)
	if age < ttl {
		return false, ttl - age, nil
	}
	logr.FromContextOrDiscard(ctx).Info("deleting orphaned profile", "profile", wp.Name, "orphanTTL", ttl.String())
	if err := c.client.Delete(ctx, wp); err != nil && !apierrors.IsNotFound(err) {
		return false, 0, err
	}
	return true, 0, nil
}
