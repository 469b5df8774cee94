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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	ctlmetrics "github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
)

// Controller reconciles pods.
type Controller struct {
	clock    clock.PassiveClock
	client   client.Client // cached reads, writes
	live     client.Reader // uncached: pods that left the label-filtered cache
	state    *config.State
	resolver *resolve.Resolver
	metrics  *Metrics
	log      logr.Logger // the watcher component's logger (SPEC §11.4)
	// events records Sized on pods, limited per profile by sizedLimit.
	events     *events.Recorder
	sizedLimit *events.Limiter
	sizedPods  sizedLog
	// workers is how many pods are reconciled at once (at least 1).
	workers int
}

// DefaultWorkers is the enrollment controller's default concurrency: a mass rollout binds
// thousands of pods, each waiting on API writes (profile creation, identity, stamps).
// Two pods of one new profile racing to create it is handled (AlreadyExists requeues).
const DefaultWorkers = 8

// SetWorkers sets how many pods are reconciled at once (before Register).
func (c *Controller) SetWorkers(n int) { c.workers = n }

// requeueSuppressed is how soon a stamp suppressed by the kill switch is retried (release
// also re-enqueues every pod).
const requeueSuppressed = 30 * time.Second

// New returns the enrollment controller. c reads from the cache and writes; live reads
// pods from the API server; log is the watcher component's logger.
func New(clk clock.PassiveClock, c client.Client, live client.Reader, state *config.State, r *resolve.Resolver, m *Metrics, log logr.Logger) *Controller {
	return &Controller{clock: clk, client: c, live: live, state: state, resolver: r, metrics: m, log: log, workers: DefaultWorkers}
}

// Gone handles a pod missing from the cache. The cache holds only labelled pods: a pod
// whose label was removed disappears from it while it still carries profile-ref, so it is
// looked up live before it is called deleted.
func (c *Controller) Gone(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.live.Get(ctx, key, pod); err != nil {
		if apierrors.IsNotFound(err) {
			c.sizedPods.forget(key)
			c.metrics.PodsProcessed.WithLabelValues(EventDeleted, key.Namespace, "").Inc()
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	return c.Reconcile(ctx, pod)
}

// Reconcile binds, re-stamps or un-enrolls one pod.
func (c *Controller) Reconcile(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	log := c.log.WithValues("controller", "enrollment", "pod", klog.KObj(pod), "namespace", pod.Namespace)
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
	res, err := c.stamp(ctx, log, pod, b, snap)
	if err == nil {
		c.sized(pod, b.ProfileName)
	}
	return res, err
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
		c.log.Info("created profile", "profile", b.ProfileName)
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
		c.state.Suppress(log, snap, config.ActionEnroll, "kill switch active, not stamping pod")
		return reconcile.Result{RequeueAfter: requeueSuppressed}, nil
	}
	ann := map[string]any{ballastv1.ProfileRefAnnotation: b.ProfileName, ballastv1.PolicyRefAnnotation: nil}
	if wantPolicy != "" {
		ann[ballastv1.PolicyRefAnnotation] = wantPolicy
	}
	if err := c.client.Patch(ctx, pod, mergePatch(map[string]any{"metadata": map[string]any{"annotations": ann}})); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("stamping pod %s: %w", klog.KObj(pod), err)
	}
	if oldProfile != "" && oldProfile != b.ProfileName {
		// The old profile-ref is whatever the pod carried (anyone who may patch the pod
		// can write it): counted under it only when that profile exists.
		c.metrics.PodsProcessed.WithLabelValues(EventUnenrolled, pod.Namespace, ctlmetrics.KnownProfile(ctx, c.client, oldProfile)).Inc()
		log.Info("pod migrated to another profile", "from", oldProfile)
	}
	if oldProfile != b.ProfileName {
		c.metrics.PodsProcessed.WithLabelValues(EventCreated, pod.Namespace, b.ProfileName).Inc()
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
		c.state.Suppress(log, snap, config.ActionUnenroll, "kill switch active, not un-enrolling pod", "profile", old)
		return reconcile.Result{RequeueAfter: requeueSuppressed}, nil
	}
	ann := map[string]any{ballastv1.ProfileRefAnnotation: nil, ballastv1.PolicyRefAnnotation: nil}
	if err := c.client.Patch(ctx, pod, mergePatch(map[string]any{"metadata": map[string]any{"annotations": ann}})); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("un-enrolling pod %s: %w", klog.KObj(pod), err)
	}
	c.metrics.PodsProcessed.WithLabelValues(EventUnenrolled, pod.Namespace, ctlmetrics.KnownProfile(ctx, c.client, old)).Inc()
	log.Info("pod un-enrolled", "profile", old)
	return reconcile.Result{}, nil
}
