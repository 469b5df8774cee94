package resize

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

// specTargets are the pod's long-running containers' current (desired) resources.
func specTargets(pod *corev1.Pod) []ContainerTarget {
	var out []ContainerTarget
	for _, ch := range longRunningChanges(pod) {
		c := containerOf(pod, ch.Name)
		out = append(out, ContainerTarget{Name: ch.Name, Sidecar: ch.Sidecar,
			Requests: nonNil(c.Resources.Requests).DeepCopy(), Limits: nonNil(c.Resources.Limits).DeepCopy()})
	}
	return out
}

// longRunningChanges are empty changes addressing every long-running container.
func longRunningChanges(pod *corev1.Pod) []sizing.ContainerChanges {
	var out []sizing.ContainerChanges
	for i, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, sizing.ContainerChanges{Name: c.Name, Sidecar: true, Index: i})
		}
	}
	for i, c := range pod.Spec.Containers {
		out = append(out, sizing.ContainerChanges{Name: c.Name, Index: i})
	}
	return out
}

// allocatedPod is pod with each container's requests and limits set to what the kubelet
// allocated and actuated (status), the values a Deferred resize grows from.
func allocatedPod(pod *corev1.Pod) *corev1.Pod {
	base := pod.DeepCopy()
	status := map[string]corev1.ContainerStatus{}
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		status[s.Name] = s
	}
	set := func(c *corev1.Container) {
		s, ok := status[c.Name]
		if !ok {
			return
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := s.AllocatedResources[res]; ok {
				c.Resources.Requests[res] = q
			}
			if s.Resources != nil {
				if q, ok := s.Resources.Limits[res]; ok && c.Resources.Limits != nil {
					c.Resources.Limits[res] = q
				}
			}
		}
	}
	for i := range base.Spec.InitContainers {
		if base.Spec.InitContainers[i].Resources.Requests != nil {
			set(&base.Spec.InitContainers[i])
		}
	}
	for i := range base.Spec.Containers {
		if base.Spec.Containers[i].Resources.Requests != nil {
			set(&base.Spec.Containers[i])
		}
	}
	return base
}

// capDeferred is rung 4 for a pod already Deferred: its ask is lowered to what the node
// can hold next to every other pod, growing from what the kubelet allocated; when nothing
// fits, the resize is reverted to the allocated values (which clears Deferred).
func (c *Controller) capDeferred(ctx context.Context, pod *corev1.Pod, why string) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "rung", RungCap)
	v, err := c.view(ctx, pod.Spec.NodeName)
	if err != nil || v == nil {
		return reconcile.Result{}, err
	}
	key := pod.Namespace + "/" + pod.Name
	var others Resources
	for _, p := range v.plan.Pods {
		if p.Key != key {
			others = others.Add(p.Held)
		}
	}
	ceiling := v.plan.Allocatable.Sub(others)
	base := allocatedPod(pod)
	capped, ok := CapTargets(base, specTargets(pod), ceiling)
	result, msg := "capped", fmt.Sprintf("Deferred growth capped at what node %s can hold (%s)", v.node.Name, why)
	// Nothing fits, or the node has room by every account and the kubelet still defers (a
	// non-resource admission failure, which it also reports as Deferred): lowering cannot
	// help, so the resize is reverted.
	if !ok || unchanged(base, capped) || unchanged(pod, capped) {
		capped = specTargets(base)
		result, msg = "reverted", fmt.Sprintf("Deferred growth on node %s reverted to the allocated values (%s)", v.node.Name, why)
	}
	changes := withTargets(longRunningChanges(pod), capped)
	again, err := c.send(ctx, proposal{pod: pod, changes: changes, why: "cap"}, changes, nil)
	if again || err != nil { // a 409: the pod changed; the next pass decides again
		return reconcile.Result{Requeue: again}, err
	}
	// Counted once the lowered resize is accepted, so a retried pass counts once.
	c.metrics.Ladder.WithLabelValues(string(RungCap), result).Inc()
	c.events.Ladder(pod, RungCap, msg)
	log.Info("Deferred growth lowered", "result", result, "why", why, "ceiling_millicpu", ceiling.MilliCPU, "ceiling_bytes", ceiling.Bytes)
	c.forget(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	return reconcile.Result{}, nil
}

// revertInfeasible puts an Infeasible resize's spec back to what the kubelet allocated: the
// kubelet will never actuate it, and until the spec matches, the scheduler and the kubelet
// keep reserving max(spec, actual) for the pod. The Infeasible state and its blocked backoff
// stay as recorded; no new resize-state is written.
func (c *Controller) revertInfeasible(ctx context.Context, pod *corev1.Pod, why string) (bool, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "rung", RungCap)
	if snap := c.state.Get(); snap.Active() || c.opts.DryRun {
		return false, nil
	}
	base := allocatedPod(pod)
	back := specTargets(base)
	if unchanged(pod, back) {
		return false, nil
	}
	body, err := resizeBody(pod, withTargets(longRunningChanges(pod), back))
	if err != nil {
		return false, err
	}
	err = c.client.SubResource("resize").Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body))
	if _, rerr := ObserveError(err); rerr != nil {
		return true, nil
	}
	if err != nil {
		c.metrics.Ladder.WithLabelValues(string(RungCap), "revert_failed").Inc()
		return false, fmt.Errorf("reverting the Infeasible resize of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.metrics.Ladder.WithLabelValues(string(RungCap), "reverted_infeasible").Inc()
	c.events.Ladder(pod, RungCap, "Infeasible resize reverted to the allocated values: "+why)
	log.Info("Infeasible resize reverted to the allocated values", "why", why, "patch", string(body))
	return false, nil
}
