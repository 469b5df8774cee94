package resize

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// capDeferred is rung 4 for a pod already Deferred: its ask is lowered to what the node
// can hold next to every other pod, growing from what the kubelet allocated; when nothing
// fits, the resize is reverted to the allocated values (which clears Deferred).
func (c *Controller) capDeferred(ctx context.Context, pod *corev1.Pod, why string) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "rung", resizeplan.RungCap)
	v, err := c.view(ctx, pod.Spec.NodeName)
	if err != nil || v == nil {
		return reconcile.Result{}, err
	}
	key := pod.Namespace + "/" + pod.Name
	var others resizeplan.Resources
	for _, p := range v.plan.Pods {
		if p.Key != key {
			others = others.Add(p.Held)
		}
	}
	ceiling := v.plan.Allocatable.Sub(others)
	base := resizeplan.AllocatedPod(pod)
	capped, ok := resizeplan.CapTargets(base, resizeplan.SpecTargets(pod), ceiling)
	result, msg := "capped", fmt.Sprintf("Deferred growth capped at what node %s can hold (%s)", v.node.Name, why)
	// Nothing fits, or the node has room by every account and the kubelet still defers (a
	// non-resource admission failure, which it also reports as Deferred): lowering cannot
	// help, so the resize is reverted.
	if !ok || resizeplan.Unchanged(base, capped) || resizeplan.Unchanged(pod, capped) {
		capped = resizeplan.SpecTargets(base)
		result, msg = "reverted", fmt.Sprintf("Deferred growth on node %s reverted to the allocated values (%s)", v.node.Name, why)
	}
	changes := resizeplan.WithTargets(sizing.LongRunningChanges(pod), capped)
	again, err := c.send(ctx, proposal{pod: pod, changes: changes, why: "cap"}, changes, nil)
	if again || err != nil { // a 409: the pod changed; the next pass decides again
		return reconcile.Result{Requeue: again}, err
	}
	// Counted once the lowered resize is accepted, so a retried pass counts once.
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungCap), result).Inc()
	c.events.Publish(ladderEvent(pod, resizeplan.RungCap, msg))
	log.Info("Deferred growth lowered", "result", result, "why", why, "ceiling_millicpu", ceiling.MilliCPU, "ceiling_bytes", ceiling.Bytes)
	c.forget(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	return reconcile.Result{}, nil
}

// revertInfeasible puts an Infeasible resize's spec back to what the kubelet allocated: the
// kubelet will never actuate it, and until the spec matches, the scheduler and the kubelet
// keep reserving max(spec, actual) for the pod. The Infeasible state and its blocked backoff
// stay as recorded; no new resize-state is written.
func (c *Controller) revertInfeasible(ctx context.Context, pod *corev1.Pod, why string) (bool, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "rung", resizeplan.RungCap)
	if snap := c.state.Get(); snap.Active() || c.opts.DryRun {
		return false, nil
	}
	base := resizeplan.AllocatedPod(pod)
	back := resizeplan.SpecTargets(base)
	if resizeplan.Unchanged(pod, back) {
		return false, nil
	}
	body, err := resizeBody(pod, resizeplan.WithTargets(sizing.LongRunningChanges(pod), back), nil)
	if err != nil {
		return false, err
	}
	err = c.client.SubResource("resize").Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body))
	if _, rerr := ObserveError(err); rerr != nil {
		return true, nil
	}
	if err != nil {
		c.metrics.Ladder.WithLabelValues(string(resizeplan.RungCap), "revert_failed").Inc()
		return false, fmt.Errorf("reverting the Infeasible resize of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungCap), "reverted_infeasible").Inc()
	c.events.Publish(ladderEvent(pod, resizeplan.RungCap, "Infeasible resize reverted to the allocated values: "+why))
	log.Info("Infeasible resize reverted to the allocated values", "why", why, "patch", string(body))
	return false, nil
}
