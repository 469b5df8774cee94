package resize

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/hpa"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// resizeBody renders the pods/resize strategic-merge patch (sizing.ResizePatch: each
// adjusted container with its full requests and limits, sidecars under
// spec.initContainers) with the pod's resourceVersion as a precondition, so a resize
// decided on a stale pod is answered 409 instead of overwriting a newer one.
func resizeBody(pod *corev1.Pod, changes []sizing.ContainerChanges, podLevel *sizing.PodPlan) ([]byte, error) {
	body, err := sizing.ResizePatchWithPod(pod, changes, podLevel)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("rendering resize patch: %w", err)
	}
	m["metadata"] = map[string]any{"resourceVersion": pod.ResourceVersion}
	return json.Marshal(m)
}

// send issues one resize (SPEC §8.4) unless the kill switch or dry-run suppresses it, and
// records the result: annotations, events, metrics, the outcome of an API rejection (§9).
// requeue is true after a 409 Conflict.
func (c *Controller) send(ctx context.Context, p proposal, changes []sizing.ContainerChanges, clamps []sizing.Clamp) (bool, error) {
	pod := p.pod
	pol, profile := c.podAttrs(ctx, pod)
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "profile", profile,
		"policy", pol, "action", "resize", "why", p.why)
	// Pod-level spec.resources go with the changes they were derived from, never with a
	// capped variant of them (a cap re-plans the containers only).
	var podLevel *sizing.PodPlan
	if p.podLevel != nil && equality.Semantic.DeepEqual(changes, p.changes) {
		podLevel = p.podLevel
	}
	body, err := resizeBody(pod, changes, podLevel)
	if err != nil {
		return false, err
	}
	if snap := c.state.Get(); snap.Active() {
		c.state.Suppress(log, snap, config.ActionResize, "kill switch active, resize not issued")
		return false, nil
	}
	if c.opts.DryRun {
		c.metrics.Skipped.WithLabelValues(sizing.ReasonDryRun, pol, pod.Namespace, profile).Inc()
		log.Info("dry-run: would resize the pod in place", "dry_run", true, "patch", string(body))
		return false, nil
	}
	shrunk := c.shrinkOf(pod, changes) // before the patch, which updates pod in place
	var rescales []hpa.Rescale         // likewise
	for _, t := range p.rescaled {
		if before, after, ok := sizing.RequestSum(pod, changes, t); ok && before != after {
			rescales = append(rescales, hpa.Rescale{Namespace: pod.Namespace, Target: t, Before: before, After: after})
		}
	}
	err = c.client.SubResource("resize").Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body))
	obs, rerr := ObserveError(err)
	if rerr != nil {
		log.V(1).Info("resize conflicted with a newer pod; deciding again", "error", err.Error())
		return true, nil
	}
	now := c.clock.Now()
	if err == nil {
		c.mu.Lock()
		c.since[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = podMark{uid: pod.UID, gen: pod.Generation}
		c.mu.Unlock()
		c.shrunk.keep(pod, shrunk)
		c.remember(ctx, pod, p.why, changes, shrunk != nil)
		c.metrics.Applied.WithLabelValues(pol, pod.Namespace, profile).Inc()
		c.events.Publish(resizedEvent(pod))
		for _, cl := range clamps {
			res := cl.Resource
			c.events.Publish(clampedEvent(pod, cl.Container, string(res), cl.Recommended.String(res), cl.Limit.String(res)))
			c.metrics.Clamped.WithLabelValues(cl.Container, string(res), pol, pod.Namespace, "resize", profile).Inc()
		}
		log.Info("resized the pod in place", "patch", string(body), "generation", pod.Generation)
		for _, r := range rescales { // behaviors.hpa: scale-target
			c.scaler.Enqueue(r)
		}
		return false, c.annotate(ctx, pod, Applied(now))
	}
	if obs == nil { // the pod is gone
		return false, nil
	}
	c.metrics.Failed.WithLabelValues(pol, pod.Namespace, profile).Inc()
	tr := resizeplan.Transition{From: pod.Annotations[ballastv1.ResizeStateAnnotation], To: obs.State, Message: obs.Message}
	c.record(ctx, pod, tr, now)
	log.Info("in-place resize rejected", "state", obs.State, "error", obs.Message, "patch", string(body))
	return false, nil
}

// record writes, emits and counts one state transition (SPEC §9): the annotations first,
// so an event or count never describes a state the pod does not show.
func (c *Controller) record(ctx context.Context, pod *corev1.Pod, t resizeplan.Transition, now time.Time) error {
	if err := c.annotate(ctx, pod, ForTransition(t, now)); err != nil {
		return err
	}
	c.events.Publish(transitionEvents(pod, t)...)
	if o := t.Outcome(); o != "" {
		pol, profile := c.podAttrs(ctx, pod)
		c.metrics.Outcome.WithLabelValues(o, pol, pod.Namespace, profile).Inc()
	}
	return nil
}

// policyOf is the policy attribute of a pod's metrics: its policy-ref annotation.
func policyOf(pod *corev1.Pod) string { return pod.Annotations[ballastv1.PolicyRefAnnotation] }

// annotate merge-patches Ballast's pod annotations (nil values remove keys); nothing is
// sent when they already hold.
func (c *Controller) annotate(ctx context.Context, pod *corev1.Pod, a Annotations) error {
	if !a.Changes(pod.Annotations) {
		return nil
	}
	body, err := a.MergePatch("")
	if err != nil {
		return err
	}
	if err := c.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, body)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("annotating pod %s/%s: %w", pod.Namespace, pod.Name, err))
	}
	return nil
}
