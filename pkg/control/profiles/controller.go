// Package profiles keeps WorkloadProfiles: counts of bound pods and workloads (SPEC §6.5),
// the Orphaned condition and orphan TTL (§6.6), purge of store data on deletion, and the
// statistics, readiness and recommendations computed from the store (§4, §5). It runs on
// the leader. Status is patched only on a material change.
package profiles

import (
	"context"
	"fmt"
	"github.com/go-logr/logr"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/identity"
)

// Store is what the controller needs from pkg/store; the real implementation is
// StoreAdapter over a store.Client and store.Reader.
type Store interface {
	// Read returns the merged series of a profile hash at now.
	Read(ctx context.Context, hash string, now time.Time, retention time.Duration) (Series, error)
	// Purge deletes every key of a profile hash.
	Purge(ctx context.Context, hash string) error
}

// Controller reconciles WorkloadProfiles.
type Controller struct {
	client   client.Client
	state    *config.State
	resolver *resolve.Resolver
	store    Store
	metrics  *metrics.Metrics
	log      *logr.Logger // component logger; nil = controller-runtime's
	now      func() time.Time
	// retry is how soon a profile is recomputed after a store read failed.
	retry time.Duration
}

// New returns the profiles controller; now is the clock (time.Now in production).
func New(c client.Client, state *config.State, r *resolve.Resolver, s Store, m *metrics.Metrics, now func() time.Time) *Controller {
	if now == nil {
		now = time.Now
	}
	return &Controller{client: c, state: state, resolver: r, store: s, metrics: m, now: now, retry: 15 * time.Second}
}

// Reconcile runs one pass over one profile.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wp := &ballastv1.WorkloadProfile{}
	if err := c.client.Get(ctx, req.NamespacedName, wp); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !wp.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, c.finalize(ctx, wp)
	}
	now := c.now()
	snap := c.state.Get()
	next := wp.Status.DeepCopy()

	pods, err := c.boundPods(ctx, wp.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.count(ctx, next, pods)
	setOrphaned(next, now)
	if snap.Config != nil {
		c.metrics.ProfileInfo.Set(wp.Name, identity.ProfileAttributes(snap.Config.IdentityLabels, next.TupleLabels))
	}

	// Orphan TTL (§6.6). Without a BallastConfig, or with an unparseable TTL, nothing is deleted.
	var requeue time.Duration
	if cond := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionOrphaned); cond != nil && cond.Status == metav1.ConditionTrue && snap.Config != nil {
		if ttl, ok := ballastv1.OrphanTTL(*snap.Config); ok {
			age := now.Sub(cond.LastTransitionTime.Time)
			if age >= ttl {
				logf.FromContext(ctx).Info("deleting orphaned profile", "profile", wp.Name, "orphanTTL", ttl.String())
				if err := c.client.Delete(ctx, wp); err != nil && !apierrors.IsNotFound(err) {
					return reconcile.Result{}, err
				}
				return reconcile.Result{}, nil
			}
			requeue = ttl - age
		}
	}

	interval, err := c.compute(ctx, wp, next, snap, now)
	if err != nil {
		logf.FromContext(ctx).Error(err, "computing profile statistics; keeping the last recommendations", "profile", wp.Name)
		interval = c.retry
	}
	if requeue == 0 || (interval > 0 && interval < requeue) {
		requeue = interval
	}
	if err := c.patchStatus(ctx, wp, next); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// boundPods lists the pods stamped with this profile from the cache.
func (c *Controller) boundPods(ctx context.Context, name string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.client.List(ctx, list, client.MatchingFields{enrollment.ProfileRefIndex: name}); err != nil {
		return nil, fmt.Errorf("listing pods of profile %s: %w", name, err)
	}
	return list.Items, nil
}

// count recomputes activePods, activeWorkloads and the resize summary (never incremental).
func (c *Controller) count(ctx context.Context, st *ballastv1.WorkloadProfileStatus, pods []corev1.Pod) {
	workloads := map[resolve.Workload]bool{}
	var active, deferred, infeasible int32
	var oldest *metav1.Time
	for i := range pods {
		p := &pods[i]
		if !p.DeletionTimestamp.IsZero() || !ballastv1.ValidMode(p.Labels[ballastv1.ModeLabel]) {
			continue
		}
		active++
		workloads[c.resolver.Workload(ctx, p)] = true
		switch p.Annotations[ballastv1.ResizeStateAnnotation] {
		case "Deferred":
			deferred++
			if t, err := time.Parse(time.RFC3339, p.Annotations[ballastv1.ResizeStateSinceAnnotation]); err == nil {
				if oldest == nil || t.Before(oldest.Time) {
					oldest = &metav1.Time{Time: t}
				}
			}
		case "Infeasible":
			infeasible++
		}
	}
	st.ActivePods, st.ActiveWorkloads = active, int32(len(workloads))
	st.Resize = ballastv1.ResizeSummary{DeferredPods: deferred, InfeasiblePods: infeasible, OldestDeferredSince: oldest}
}

// setOrphaned maintains the Orphaned condition; lastTransitionTime moves only on flips.
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

// finalize purges the profile's store data (unless another live profile shares its hash)
// and removes the finalizer.
func (c *Controller) finalize(ctx context.Context, wp *ballastv1.WorkloadProfile) error {
	if !controllerutil.ContainsFinalizer(wp, ballastv1.ProfileFinalizer) {
		return nil
	}
	hash := wp.Status.MeasurementHash
	shared := false
	if hash != "" {
		all := &ballastv1.WorkloadProfileList{}
		if err := c.client.List(ctx, all); err != nil {
			return err
		}
		for i := range all.Items {
			o := &all.Items[i]
			if o.Name != wp.Name && o.DeletionTimestamp.IsZero() && o.Status.MeasurementHash == hash {
				shared = true
			}
		}
		if !shared {
			if err := c.store.Purge(ctx, hash); err != nil {
				return fmt.Errorf("purging store data of profile %s: %w", wp.Name, err)
			}
		}
	}
	patch := client.MergeFromWithOptions(wp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(wp, ballastv1.ProfileFinalizer)
	if err := c.client.Patch(ctx, wp, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer of %s: %w", wp.Name, err)
	}
	c.metrics.ProfilesPurged.Inc()
	c.forget(wp.Name)
	logf.FromContext(ctx).Info("purged profile", "profile", wp.Name, "measurementHash", hash, "sharedHash", shared)
	return nil
}

func (c *Controller) forget(name string) {
	c.metrics.ProfileInfo.Delete(name)
	c.clearState(name)
}

// clearState removes the profile's series of the ballast_profiles gauge.
func (c *Controller) clearState(name string) {
	for _, s := range []string{"accruing", "ready"} {
		c.metrics.Profiles.DeleteLabelValues(s, name)
	}
}
