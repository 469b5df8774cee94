package understudy

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/understudy/doom"
)

// idle looks for a doomed pod and starts a surge (SPEC §15.4 step 1): originalReplicas is
// persisted before the Deployment is touched.
func (c *Controller) idle(ctx context.Context, log logr.Logger, u *ballastv1.Understudy, st *ballastv1.UnderstudyStatus, t target) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(u)
	pod, sig, err := c.doomed(ctx, u, t)
	if err != nil {
		return reconcile.Result{}, err
	}
	st.Phase = ballastv1.UnderstudyIdle
	if pod == nil {
		st.BlockedSince = nil
		c.setCond(st, u, ballastv1.ConditionReady, true, ReasonProtected, "no doomed node: evictions would be held until a stand-in is Ready")
		c.metrics.Blocked.Set(key, time.Time{})
		return reconcile.Result{}, c.writeStatus(ctx, u, st)
	}
	if snap := c.state.Get(); snap.Active() {
		c.state.Suppress(log, snap, actionSurge, "kill switch active: not surging", "pod", pod.Name, "node", sig.Node)
		st.BlockedSince = nil
		return reconcile.Result{}, c.writeStatus(ctx, u, st)
	}
	now := c.clock.Now()
	if sig.Source == doom.SourceEviction {
		// An eviction request alone is not proof that anything is taken away (anyone who
		// can reach the webhook can forge one): one such surge per EvictionSurgeInterval.
		if evictionSurgeLimited(st, now) {
			log.Info("eviction-only surge rate-limited", "pod", pod.Name, "lastEvictionSurgeTime", st.LastEvictionSurgeTime.Time)
			st.BlockedSince = nil
			return reconcile.Result{}, c.writeStatus(ctx, u, st)
		}
		st.LastEvictionSurgeTime = &metav1.Time{Time: now}
	}
	orig := replicas(t.dep)
	st.OriginalReplicas = &orig
	st.DoomedPod, st.DoomedNode, st.DoomClass = pod.Name, sig.Node, string(sig.Class)
	st.DoomDeadline = nil
	if sig.Deadline != nil {
		st.DoomDeadline = &metav1.Time{Time: *sig.Deadline}
	}
	st.LastSurgeTime = &metav1.Time{Time: now}
	st.Phase = ballastv1.UnderstudySurging
	c.setCond(st, u, ballastv1.ConditionReady, false, ReasonSurging, "surging: waiting for a Ready stand-in")
	relaxTooClose := doom.TooClose(sig, now, time.Duration(ballastv1.UnderstudyMinSurgeTime(u.Spec))*time.Second)
	if relaxTooClose {
		c.relax(st, u, RelaxDeadlineTooClose, fmt.Sprintf("node %s goes away at %s, sooner than minSurgeTimeSeconds", sig.Node, sig.Deadline.Format(time.RFC3339)))
	}
	if err := c.writeStatus(ctx, u, st); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.markDoomed(ctx, pod); err != nil {
		return reconcile.Result{}, err
	}
	to := orig + ballastv1.UnderstudySurge(u.Spec)
	if err := c.patchReplicas(ctx, t, to); err != nil {
		return reconcile.Result{}, err
	}
	c.metrics.Surges.WithLabelValues(u.Namespace, u.Name).Inc()
	log.Info("surge started", "pod", pod.Name, "node", sig.Node, "class", sig.Class, "source", sig.Source, "replicas", to)
	c.events.Publish(surgeEvent(u, pod.Name, sig.Node, sig.Source, orig, to), podSurgeEvent(u, pod, sig.Node, sig.Source))
	return reconcile.Result{RequeueAfter: c.opts.holdLimit(u.Spec)}, nil
}

// doomed returns the protected pod on a doomed node, or the pod whose eviction the
// webhook held (status.blockedSince set), with its merged signal.
func (c *Controller) doomed(ctx context.Context, u *ballastv1.Understudy, t target) (*corev1.Pod, doom.Signal, error) {
	var live *corev1.Pod
	for i := range t.pods {
		p := &t.pods[i]
		if podGone(p) {
			continue
		}
		live = p
		sig, ok, err := c.nodeSignal(ctx, p.Spec.NodeName)
		if err != nil {
			return nil, doom.Signal{}, err
		}
		if ok {
			return p, sig, nil
		}
	}
	if live != nil && u.Status.BlockedSince != nil {
		return live, doom.FromEviction(live.Spec.NodeName), nil
	}
	return nil, doom.Signal{}, nil
}

// surging runs steps 3-5 of SPEC §15.4 for a surge in progress.
func (c *Controller) surging(ctx context.Context, log logr.Logger, u *ballastv1.Understudy, st *ballastv1.UnderstudyStatus, t target) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(u)
	now := c.clock.Now()
	var doomedPod *corev1.Pod
	for i := range t.pods {
		if t.pods[i].Name == st.DoomedPod {
			doomedPod = &t.pods[i]
		}
	}
	sig, signalled, err := c.nodeSignal(ctx, st.DoomedNode)
	if err != nil {
		return reconcile.Result{}, err
	}
	// A relocation dooms the pod, not its node: no node signal is expected. A surge started
	// on an eviction alone waits, up to the hold limit after it started, for the evictor to
	// come back and take the pod.
	withdrawn := !signalled && u.Status.BlockedSince == nil && !relocating(st)
	graceEnd := st.LastSurgeTime.Add(c.opts.holdLimit(u.Spec))
	waiting := withdrawn && evictionSurge(st) && now.Before(graceEnd)
	if podGone(doomedPod) || (withdrawn && !waiting) {
		why := "doomed pod " + st.DoomedPod + " is gone"
		if !podGone(doomedPod) {
			why = "node " + st.DoomedNode + " is no longer doomed"
			if evictionSurge(st) {
				why = "pod " + st.DoomedPod + " was not evicted and its node is not doomed"
			}
			// The pod was never taken: keep it and remove the stand-in instead.
			if err := c.keepOriginal(ctx, t, doomedPod); err != nil {
				return reconcile.Result{}, err
			}
		}
		if err := c.scaleBack(ctx, log, u, st, t, why); err != nil {
			return reconcile.Result{}, err
		}
		st.Phase = ballastv1.UnderstudyIdle
		c.setCond(st, u, ballastv1.ConditionReady, true, ReasonProtected, why+": back to the original replica count")
		c.metrics.Blocked.Set(key, time.Time{})
		return reconcile.Result{}, c.writeStatus(ctx, u, st)
	}
	// Converge after a restart: the status says we surged, make sure the cluster agrees.
	if err := c.markDoomed(ctx, doomedPod); err != nil {
		return reconcile.Result{}, err
	}
	// A relocation in Releasing is retiring the old pod: never raise the replicas again.
	retiring := relocating(st) && st.Phase == ballastv1.UnderstudyReleasing
	if want := *st.OriginalReplicas + ballastv1.UnderstudySurge(u.Spec); replicas(t.dep) != want && !retiring {
		if err := c.patchReplicas(ctx, t, want); err != nil {
			return reconcile.Result{}, err
		}
	}
	standIn, err := c.standIn(ctx, t, st.DoomedPod)
	if err != nil {
		return reconcile.Result{}, err
	}
	deadline := st.LastSurgeTime.Add(c.opts.holdLimit(u.Spec))
	minSurge := time.Duration(ballastv1.UnderstudyMinSurgeTime(u.Spec)) * time.Second
	if relocating(st) {
		return c.relocationStep(ctx, log, u, st, t, doomedPod, standIn, deadline)
	}
	switch {
	case st.Phase == ballastv1.UnderstudySurging && standIn != "":
		st.Phase, st.BlockedSince = ballastv1.UnderstudyReleasing, nil
		c.setCond(st, u, ballastv1.ConditionReady, true, ReasonStandInReady, "stand-in "+standIn+" is Ready")
		log.Info("stand-in ready: releasing", "standIn", standIn, "pod", st.DoomedPod)
		c.events.Publish(releasedEvent(u, standIn, st.DoomedPod))
	case st.Phase == ballastv1.UnderstudyReleasing && standIn == "":
		st.Phase = ballastv1.UnderstudySurging
		c.setCond(st, u, ballastv1.ConditionReady, false, ReasonSurging, "the stand-in is no longer Ready")
	case st.Phase == ballastv1.UnderstudySurging && c.state.Get().Active():
		c.relax(st, u, RelaxKillSwitch, "kill switch active")
	case st.Phase == ballastv1.UnderstudySurging && !now.Before(deadline):
		c.relax(st, u, RelaxDeadline, fmt.Sprintf("no Ready stand-in within readinessDeadlineSeconds clamped to --understudy-max-hold (%s)", c.opts.holdLimit(u.Spec)))
	case st.Phase == ballastv1.UnderstudySurging && signalled && doom.TooClose(sig, now, minSurge):
		c.relax(st, u, RelaxDeadlineTooClose, "node "+st.DoomedNode+" goes away sooner than minSurgeTimeSeconds")
	}
	if st.Phase == ballastv1.UnderstudySurging && st.BlockedSince != nil {
		c.metrics.Blocked.Set(key, st.BlockedSince.Time)
	} else {
		c.metrics.Blocked.Set(key, time.Time{})
	}
	if err := c.writeStatus(ctx, u, st); err != nil {
		return reconcile.Result{}, err
	}
	res := reconcile.Result{RequeueAfter: defaultRequeuePeriod}
	if st.Phase == ballastv1.UnderstudySurging && deadline.Sub(now) < res.RequeueAfter {
		res.RequeueAfter = deadline.Sub(now) + 10*time.Millisecond
	}
	if waiting && graceEnd.Sub(now) < res.RequeueAfter {
		res.RequeueAfter = graceEnd.Sub(now) + 10*time.Millisecond
	}
	return res, nil
}

// relax releases the hold without a Ready stand-in.
func (c *Controller) relax(st *ballastv1.UnderstudyStatus, u *ballastv1.Understudy, reason, detail string) {
	st.Phase, st.BlockedSince = ballastv1.UnderstudyRelaxed, nil
	c.setCond(st, u, ballastv1.ConditionReady, false, ReasonHoldRelaxed, reason+": "+detail)
	c.metrics.Relaxed.WithLabelValues(u.Namespace, u.Name, reason).Inc()
	c.log.Info("hold relaxed", "understudy", u.Namespace+"/"+u.Name, "reason", reason, "detail", detail)
	c.events.Publish(relaxedEvent(u, reason, detail))
}

// standIn returns the name of a pod other than the doomed one that is Ready, not
// terminating and not on a doomed node; "" when there is none.
func (c *Controller) standIn(ctx context.Context, t target, doomedPod string) (string, error) {
	for i := range t.pods {
		p := &t.pods[i]
		if p.Name == doomedPod || !PodReady(p) {
			continue
		}
		_, doomedNode, err := c.nodeSignal(ctx, p.Spec.NodeName)
		if err != nil {
			return "", err
		}
		if !doomedNode {
			return p.Name, nil
		}
	}
	return "", nil
}

// scaleBack restores the original replica count (SPEC §15.4 step 4) and clears the surge.
func (c *Controller) scaleBack(ctx context.Context, log logr.Logger, u *ballastv1.Understudy, st *ballastv1.UnderstudyStatus, t target, why string) error {
	orig := *st.OriginalReplicas
	if replicas(t.dep) != orig {
		if err := c.patchReplicas(ctx, t, orig); err != nil {
			return err
		}
	}
	log.Info("scaled back", "replicas", orig, "why", why)
	st.OriginalReplicas, st.DoomedPod, st.DoomedNode, st.DoomClass, st.DoomDeadline = nil, "", "", "", nil
	st.BlockedSince = nil
	st.LastReleaseTime = &metav1.Time{Time: c.clock.Now()}
	return nil
}

// markDoomed steers the ReplicaSet's scale-down to the doomed pod.
func (c *Controller) markDoomed(ctx context.Context, pod *corev1.Pod) error {
	if pod.Annotations[ballastv1.PodDeletionCostAnnotation] == ballastv1.DoomedPodDeletionCost {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ballastv1.PodDeletionCostAnnotation, ballastv1.DoomedPodDeletionCost)
	if err := c.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting the deletion cost of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (c *Controller) patchReplicas(ctx context.Context, t target, n int32) error {
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	if err := c.client.Patch(ctx, t.dep, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("scaling Deployment %s/%s to %d: %w", t.dep.Namespace, t.dep.Name, n, err)
	}
	return nil
}
