package resize

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// EventStartupBoostEnded records the in-place resize that took a startup boost back.
const EventStartupBoostEnded = "StartupBoostEnded"

// ReasonStartupBoost: the pod's startup boost is active; the profile pass leaves its cpu
// to the un-boost (unboost.go) until the boost has ended.
const ReasonStartupBoost = "startup_boost"

// StartupBoosts is the resize controller's un-boost reconciler (policy
// behaviors.startupBoost): a pod boosted at admission (the startup-boost annotation, no
// "ended") is resized in place back to its un-boosted cpu once it has been Ready for
// readyFor, and the annotation is marked ended. It runs for pods in apply mode as well as
// resize mode: the un-boost is a shrink Ballast itself caused at admission, so taking it
// back is allowed wherever the boost was given. It requeues at the due time (RequeueAfter),
// never polls; the Ready transition is a pod update that wakes it.
type StartupBoosts struct{ c *Controller }

// StartupBoosts returns the un-boost reconciler (registered by Register; tests call it).
func (c *Controller) StartupBoosts() *StartupBoosts { return c.startupBoosts }

// boostActive reports whether the pod carries a startup boost not yet ended (an
// unreadable annotation counts as not active: there is nothing Ballast can take back).
func boostActive(o client.Object) bool {
	v, ok := o.GetAnnotations()[ballastv1.StartupBoostAnnotation]
	if !ok {
		return false
	}
	r, _, err := sizing.ParseBoostRecord(v)
	return err == nil && r.Ended == ""
}

// Reconcile takes one pod's startup boost back when it is due.
func (b *StartupBoosts) Reconcile(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	c := b.c
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "action", "unboost")
	v, ok := pod.Annotations[ballastv1.StartupBoostAnnotation]
	if !ok || !pod.DeletionTimestamp.IsZero() || pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodRunning {
		return reconcile.Result{}, nil
	}
	rec, readyFor, err := sizing.ParseBoostRecord(v)
	if err != nil {
		log.Info("unreadable startup-boost annotation; leaving the pod alone", "error", err.Error())
		return reconcile.Result{}, nil
	}
	if rec.Ended != "" {
		return reconcile.Result{}, nil
	}
	now := c.clock.Now()
	d := resizeplan.Unboost(pod, rec, readyFor, now)
	switch d.Step {
	case resizeplan.UnboostWaitReady:
		return reconcile.Result{}, nil
	case resizeplan.UnboostWaitReadyFor:
		log.V(1).Info("startup boost active", "until", d.Due.UTC().Format(time.RFC3339))
		return reconcile.Result{RequeueAfter: d.Wait}, nil
	}
	if snap := c.state.Get(); snap.Active() {
		c.state.Suppress(log, snap, config.ActionResize, "kill switch active, startup boost not taken back")
		return reconcile.Result{RequeueAfter: killSwitchRetry}, nil
	}
	if d.Step == resizeplan.UnboostNothing {
		log.Info("startup boost ended: no container is at its boosted cpu any more")
		return reconcile.Result{}, c.endBoost(ctx, pod, rec, now)
	}
	body, err := resizeBody(pod, d.Changes, nil) // lowering container cpu keeps pod-level values valid
	if err != nil {
		return reconcile.Result{}, err
	}
	if c.opts.DryRun {
		log.Info("dry-run: would take the startup boost back in place", "dry_run", true, "patch", string(body))
		return reconcile.Result{}, nil
	}
	err = c.client.SubResource("resize").Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body))
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, nil
	case apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("taking the startup boost of %s/%s back: %w", pod.Namespace, pod.Name, err)
	}
	c.metrics.Unboosted.Inc()
	c.events.Publish(events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: EventStartupBoostEnded,
		Message: fmt.Sprintf("startup boost taken back in place after Ready for %s", readyFor)})
	log.Info("startup boost taken back in place", "patch", string(body), "ready_for", readyFor.String(),
		"late", now.Sub(d.Due).String())
	return reconcile.Result{}, c.endBoost(ctx, pod, rec, now)
}

// endBoost marks the pod's startup-boost annotation ended at now.
func (c *Controller) endBoost(ctx context.Context, pod *corev1.Pod, rec sizing.BoostRecord, now time.Time) error {
	rec.Ended = now.UTC().Format(time.RFC3339)
	return c.annotate(ctx, pod, Annotations{ballastv1.StartupBoostAnnotation: str(rec.Encode())})
}
