// Package enrollment binds enrolled pods to their profiles (SPEC §6.3), un-enrolls pods that
// left the ladder (§6.4) and re-evaluates bound pods when their resolution inputs change
// (§6.7). Counting lives with the profiles controller; this controller never counts.
package enrollment

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
)

// Controller reconciles pods.
type Controller struct {
	client   client.Client // cached reads, writes
	live     client.Reader // uncached: pods that left the label-filtered cache
	state    *config.State
	resolver *resolve.Resolver
	metrics  *metrics.Metrics
	log      *logr.Logger // component logger; nil = controller-runtime's
}

// New returns the enrollment controller.
func New(c client.Client, live client.Reader, state *config.State, r *resolve.Resolver, m *metrics.Metrics) *Controller {
	return &Controller{client: c, live: live, state: state, resolver: r, metrics: m}
}

// Reconcile binds, re-stamps or un-enrolls one pod.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	pod := &corev1.Pod{}
	err := c.client.Get(ctx, req.NamespacedName, pod)
	if apierrors.IsNotFound(err) {
		// The cache holds only labelled pods: a pod whose label was removed disappears from
		// it while it still carries profile-ref. Look it up live before calling it deleted.
		if err = c.live.Get(ctx, req.NamespacedName, pod); apierrors.IsNotFound(err) {
			c.metrics.PodsProcessed.WithLabelValues("deleted", req.Namespace, "").Inc()
			return reconcile.Result{}, nil
		}
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if !pod.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // not live: counted out by the profiles controller
	}
	snap := c.state.Get()
	if !ballastv1.ValidMode(pod.Labels[ballastv1.ModeLabel]) {
		return c.unenroll(ctx, log, pod, snap)
	}
	if snap.Config == nil {
		return reconcile.Result{}, nil // BallastConfig creation re-enqueues every pod
	}
	b, err := c.resolver.Resolve(ctx, pod, pod.Namespace, snap.Config.IdentityLabels)
	if err != nil {
		return reconcile.Result{}, err
	}
	log = log.WithValues("profile", b.ProfileName, "policy", b.PolicyRefAnnotation())
	log.V(1).Info("resolved policy")
	if requeue, err := c.ensureProfile(ctx, b); err != nil || requeue > 0 {
		return reconcile.Result{RequeueAfter: requeue}, err
	}
	return c.stamp(ctx, log, pod, b, snap)
}

// ensureProfile creates the profile or brings its identity fields up to date. A positive
// duration asks for a requeue (profile terminating, or created concurrently).
func (c *Controller) ensureProfile(ctx context.Context, b resolve.Binding) (time.Duration, error) {
	wp := &ballastv1.WorkloadProfile{}
	err := c.client.Get(ctx, client.ObjectKey{Name: b.ProfileName}, wp)
	switch {
	case apierrors.IsNotFound(err):
		wp = &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{
			Name: b.ProfileName, Finalizers: []string{ballastv1.ProfileFinalizer}}}
		if err := c.client.Create(ctx, wp); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return time.Second, nil
			}
			return 0, fmt.Errorf("creating WorkloadProfile %s: %w", b.ProfileName, err)
		}
		c.metrics.ProfilesCreated.Inc()
		logf.FromContext(ctx).Info("created profile", "profile", b.ProfileName)
	case err != nil:
		return 0, err
	case !wp.DeletionTimestamp.IsZero():
		return time.Second, nil
	}
	want := ballastv1.WorkloadProfileStatus{TupleLabels: b.TupleLabels, SelectorLabels: b.SelectorLabels,
		PolicyRef: b.PolicyRef(), MeasurementHash: b.MeasurementHash}
	st := wp.Status
	if equality.Semantic.DeepEqual(st.TupleLabels, want.TupleLabels) && equality.Semantic.DeepEqual(st.SelectorLabels, want.SelectorLabels) &&
		equality.Semantic.DeepEqual(st.PolicyRef, want.PolicyRef) && st.MeasurementHash == want.MeasurementHash {
		return 0, nil
	}
	patch := map[string]any{"status": map[string]any{
		"tupleLabels": want.TupleLabels, "selectorLabels": want.SelectorLabels,
		"policyRef": want.PolicyRef, "measurementHash": want.MeasurementHash,
	}}
	if err := c.client.Status().Patch(ctx, wp, mergePatch(patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return time.Second, nil
		}
		return 0, fmt.Errorf("patching identity of WorkloadProfile %s: %w", b.ProfileName, err)
	}
	return 0, nil
}

// stamp writes profile-ref and policy-ref when they differ, in one merge patch.
func (c *Controller) stamp(ctx context.Context, log logr.Logger, pod *corev1.Pod, b resolve.Binding, snap config.Snapshot) (reconcile.Result, error) {
	oldProfile := pod.Annotations[ballastv1.ProfileRefAnnotation]
	oldPolicy, hadPolicy := pod.Annotations[ballastv1.PolicyRefAnnotation]
	wantPolicy := b.PolicyRefAnnotation()
	if oldProfile == b.ProfileName && ((wantPolicy == "" && !hadPolicy) || (hadPolicy && oldPolicy == wantPolicy)) {
		return reconcile.Result{}, nil
	}
	if snap.Active() {
		c.metrics.KillSwitchSuppress.WithLabelValues("enroll").Inc()
		log.Info("warning: kill switch active, not stamping pod", "kill_switch", true,
			"kill_switch_reason", snap.KillSwitch, "action", "enroll", "pod", klogRef(pod))
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
	}
	ann := map[string]any{ballastv1.ProfileRefAnnotation: b.ProfileName, ballastv1.PolicyRefAnnotation: nil}
	if wantPolicy != "" {
		ann[ballastv1.PolicyRefAnnotation] = wantPolicy
	}
	if err := c.client.Patch(ctx, pod, mergePatch(map[string]any{"metadata": map[string]any{"annotations": ann}})); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("stamping pod %s: %w", klogRef(pod), err)
	}
	if oldProfile != "" && oldProfile != b.ProfileName {
		c.metrics.PodsProcessed.WithLabelValues("unenrolled", pod.Namespace, oldProfile).Inc()
		log.Info("pod migrated to another profile", "pod", klogRef(pod), "from", oldProfile)
	}
	if oldProfile != b.ProfileName {
		c.metrics.PodsProcessed.WithLabelValues("created", pod.Namespace, b.ProfileName).Inc()
	}
	return reconcile.Result{}, nil
}

// unenroll removes the bookkeeping annotations of a pod that is no longer enrolled.
func (c *Controller) unenroll(ctx context.Context, log logr.Logger, pod *corev1.Pod, snap config.Snapshot) (reconcile.Result, error) {
	old, ok := pod.Annotations[ballastv1.ProfileRefAnnotation]
	if !ok {
		return reconcile.Result{}, nil
	}
	if snap.Active() {
		c.metrics.KillSwitchSuppress.WithLabelValues("unenroll").Inc()
		log.Info("warning: kill switch active, not un-enrolling pod", "kill_switch", true,
			"kill_switch_reason", snap.KillSwitch, "action", "unenroll", "pod", klogRef(pod))
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
	}
	ann := map[string]any{ballastv1.ProfileRefAnnotation: nil, ballastv1.PolicyRefAnnotation: nil}
	if err := c.client.Patch(ctx, pod, mergePatch(map[string]any{"metadata": map[string]any{"annotations": ann}})); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("un-enrolling pod %s: %w", klogRef(pod), err)
	}
	c.metrics.PodsProcessed.WithLabelValues("unenrolled", pod.Namespace, old).Inc()
	log.Info("pod un-enrolled", "pod", klogRef(pod), "profile", old)
	return reconcile.Result{}, nil
}

// Register wires the controller; see watches.go for the triggers.
func (c *Controller) Register(mgr ctrl.Manager) error { return c.register(mgr) }
