package resize

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

// killSwitchRetry is when a suppressed outcome is recorded again (after release, §10.2).
const killSwitchRetry = 5 * time.Second

// PodOutcomes is the resize controller's pod reconciler (SPEC §9): the outcome of each
// Ballast resize, the Deferred ladder's time limits and the raise-back after a shrink, over
// the state it shares with ProfilePass and the fast raises.
type PodOutcomes struct{ c *Controller }

// PodOutcomes returns the pod reconciler (registered by Register; tests call it).
func (c *Controller) PodOutcomes() *PodOutcomes { return c.podOutcomes }

// Gone forgets a deleted pod's marks.
func (o *PodOutcomes) Gone(_ context.Context, key types.NamespacedName) (reconcile.Result, error) {
	o.c.forget(key)
	o.c.shrunk.drop(key)
	return reconcile.Result{}, nil
}

// Reconcile observes one resize-mode pod after a Ballast patch (SPEC §9): it maps the
// pod's conditions to a resize-state, records each transition once, and works the
// Deferred ladder's time limits.
func (o *PodOutcomes) Reconcile(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	c := o.c
	log := ctrl.LoggerFrom(ctx)
	key := client.ObjectKeyFromObject(pod)
	if res, done, err := c.checkRevert(ctx, pod); done || err != nil {
		return res, err
	}
	state := pod.Annotations[ballastv1.ResizeStateAnnotation]
	if !resizeplan.Settling(state) {
		return reconcile.Result{}, nil
	}
	c.mu.Lock()
	m, _ := mark(c.since, pod)
	c.mu.Unlock()
	since := m.gen
	now := c.clock.Now()
	obs := resizeplan.Observe(pod, since)
	if t, changed := resizeplan.Next(state, obs); changed {
		if snap := c.state.Get(); snap.Active() {
			c.state.Suppress(log, snap, config.ActionOutcome, "kill switch active, resize outcome not recorded", "state", obs.State)
			return reconcile.Result{RequeueAfter: killSwitchRetry}, nil
		}
		if err := c.record(ctx, pod, t, now); err != nil {
			return reconcile.Result{}, err
		}
		log.Info("resize outcome", "namespace", pod.Namespace, "pod", pod.Name, "from", t.From, "to", t.To, "message", t.Message,
			"profile", pod.Annotations[ballastv1.ProfileRefAnnotation], "policy", policyOf(pod))
		state = t.To
		pod.Annotations[ballastv1.ResizeStateSinceAnnotation] = now.UTC().Format(time.RFC3339)
		if t.To == ballastv1.ResizeStateInfeasible {
			// The kubelet accepted the patch and will never actuate it: put the spec back.
			// A conflict re-reads the pod (its state is recorded, so no later pass comes here).
			for try := 0; try < 3; try++ {
				again, err := c.revertInfeasible(ctx, pod, t.Message)
				if err != nil {
					return reconcile.Result{}, err
				}
				if !again || c.api.Get(ctx, key, pod) != nil {
					break
				}
			}
		}
	}
	if !resizeplan.Settling(state) {
		c.forget(key)
		return reconcile.Result{}, c.releaseIfIdle(ctx, pod.Spec.NodeName)
	}
	if state == ballastv1.ResizeStateDeferred {
		return c.escalate(ctx, pod, now)
	}
	return reconcile.Result{}, nil
}

func (c *Controller) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.since, key)
	delete(c.handedOver, key)
}

// escalate applies the ladder's time limits to a Deferred pod: after DonorWait (rung 1)
// the growth is handed over (rung 2) when acceptable, else relocated (rung 3), else capped
// (rung 4); after HandOverWait without the scheduler resolving it, it is capped. The
// kubelet's own 3-minute recheck is not a plan.
func (c *Controller) escalate(ctx context.Context, pod *corev1.Pod, now time.Time) (reconcile.Result, error) {
	since, err := time.Parse(time.RFC3339, pod.Annotations[ballastv1.ResizeStateSinceAnnotation])
	if err != nil {
		since = now
	}
	c.mu.Lock()
	handed, wasHanded := mark(c.handedOver, pod)
	c.mu.Unlock()
	if wasHanded {
		if wait := c.opts.HandOverWait - now.Sub(handed.at); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		return c.capDeferred(ctx, pod, fmt.Sprintf("scheduler preemption did not resolve it within %s", c.opts.HandOverWait))
	}
	if wait := c.opts.DonorWait - now.Sub(since); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if snap := c.state.Get(); snap.Active() {
		return reconcile.Result{RequeueAfter: killSwitchRetry}, nil
	}
	v, err := c.view(ctx, pod.Spec.NodeName)
	if err != nil || v == nil {
		return reconcile.Result{}, err
	}
	free := resizeplan.PlanNode(v.plan, nil).Free
	shortfall := resizeplan.Resources{}.Sub(free).Positive()
	ok, why := c.canHandOver(v, pod, shortfall, false, c.donorsInFlight(v, pod))
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungDonors), "timed_out").Inc()
	c.events.Publish(ladderEvent(pod, resizeplan.RungDonors, fmt.Sprintf("still Deferred %s after the donors' shrinks", c.opts.DonorWait)))
	if ok {
		return reconcile.Result{RequeueAfter: c.opts.HandOverWait}, c.handOver(ctx, pod, v.node.Name, "Deferred beyond the donors' time limit")
	}
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungHandOver), "refused").Inc()
	ctrl.LoggerFrom(ctx).Info("not handing the Deferred growth over to scheduler preemption", "rung", resizeplan.RungHandOver, "pod", pod.Name, "why", why)
	if took, err := c.relocate(ctx, pod, resizeplan.SpecTargets(pod), why); took || err != nil {
		// Look again later: a relocation that is abandoned leaves the pod Deferred, and the
		// Relocator then declines it, so rung 4 caps it.
		return reconcile.Result{RequeueAfter: c.opts.HandOverWait}, err
	}
	return c.capDeferred(ctx, pod, why)
}

// donorsInFlight reports whether another resize-mode pod on the node has a resize that has
// not settled (its room is not actuated yet).
func (c *Controller) donorsInFlight(v *nodeView, pod *corev1.Pod) bool {
	for _, o := range v.pods {
		s := o.Annotations[ballastv1.ResizeStateAnnotation]
		if o.UID != pod.UID && (s == ballastv1.ResizeStatePending || s == ballastv1.ResizeStateInProgress) {
			return true
		}
	}
	return false
}
