package resize

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

// climb works a growth the planner could not fit, at plan time: rung 2 (hand over to
// scheduler preemption when every candidate victim is acceptable), rung 3 (relocation
// hook), rung 4 (cap at what the node can hold). Rungs 0 and 1 already ran: the guard is
// held and the donors' shrinks are in the plan.
func (c *Controller) climb(ctx context.Context, v *nodeView, plan resizeplan.Plan, s resizeplan.Step, p proposal) (bool, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", p.pod.Namespace, "pod", p.pod.Name, "node", v.node.Name)
	others := 0
	for _, o := range plan.Steps {
		if o.Key != s.Key && !o.Shrink && o.Decision != resizeplan.DecisionSend && o.Decision != resizeplan.DecisionNotNeeded {
			others++
		}
	}
	ok, why := c.canHandOver(v, p.pod, s.Shortfall, others > 0, inFlight(plan))
	if ok {
		again, err := c.send(ctx, p, p.changes, p.clamps)
		if err != nil || again {
			return again, err
		}
		return false, c.handOver(ctx, p.pod, v.node.Name, "nothing left to shrink on the node; every pod scheduler preemption could pick is acceptable")
	}
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungHandOver), "refused").Inc()
	log.Info("not handing the growth over to scheduler preemption", "rung", resizeplan.RungHandOver, "why", why)
	if took, err := c.relocate(ctx, p.pod, p.targets(), why); took || err != nil {
		return false, err
	}
	// Rung 4: what the node can ever give the pod is what it holds plus the room.
	ceiling := resizeplan.Accounted(p.pod, nil).Add(s.Room)
	capped, fits := resizeplan.CapTargets(p.pod, p.targets(), ceiling)
	if !fits || resizeplan.Unchanged(p.pod, capped) {
		c.metrics.Ladder.WithLabelValues(string(resizeplan.RungCap), "nothing_fits").Inc()
		msg := fmt.Sprintf("growth needs %s more cpu and %s more memory than node %s can give (%s); not resized",
			milli(s.Shortfall.MilliCPU), mib(s.Shortfall.Bytes), v.node.Name, why)
		c.events.Publish(ladderEvent(p.pod, resizeplan.RungCap, msg))
		log.Info("growth does not fit the node; not resized", "rung", resizeplan.RungCap, "shortfall_millicpu", s.Shortfall.MilliCPU, "shortfall_bytes", s.Shortfall.Bytes)
		return false, nil
	}
	p.why = "cap"
	again, err := c.send(ctx, p, resizeplan.WithTargets(p.changes, capped), nil)
	if again || err != nil {
		return again, err
	}
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungCap), "capped").Inc()
	c.events.Publish(ladderEvent(p.pod, resizeplan.RungCap, fmt.Sprintf("growth capped at what node %s can hold (short by %s cpu, %s memory; %s)",
		v.node.Name, milli(s.Shortfall.MilliCPU), mib(s.Shortfall.Bytes), why)))
	log.Info("growth capped at what the node can hold", "rung", resizeplan.RungCap, "ceiling_millicpu", ceiling.MilliCPU, "ceiling_bytes", ceiling.Bytes)
	return false, nil
}

// inFlight reports whether the plan sends shrinks (room not actuated yet).
func inFlight(plan resizeplan.Plan) bool {
	for _, s := range plan.Steps {
		if s.Shrink && s.Decision == resizeplan.DecisionSend {
			return true
		}
	}
	return false
}

// canHandOver runs the rung 2 checks on a node view.
func (c *Controller) canHandOver(v *nodeView, pod *corev1.Pod, shortfall resizeplan.Resources, othersNeedGuard, donorsInFlight bool) (bool, string) {
	switch {
	case !c.preemptible(v.node, c.clock.Now()):
		return false, "scheduler resize preemption cannot fire on the node"
	case othersNeedGuard:
		return false, "other growths on the node still need the guard"
	}
	for _, o := range v.pods {
		if o.UID != pod.UID && resizeplan.Deferred(o) {
			return false, fmt.Sprintf("pod %s/%s is Deferred too and would be handed over with it", o.Namespace, o.Name)
		}
	}
	_, others := guardKeys(v.node)
	key := pod.Namespace + "/" + pod.Name
	var target resizeplan.NodePod
	for _, np := range v.plan.Pods {
		if np.Key == key {
			target = np
		}
	}
	never := pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever
	return resizeplan.HandOver(resizeplan.HandOverInput{Node: v.plan, Target: target, PreemptionNever: never, Shortfall: shortfall,
		OtherOwners: others, DonorsInFlight: donorsInFlight})
}

// handOver is rung 2: releasing Ballast's key lets the scheduler preempt lower-priority
// pods for the Deferred growth (within ~0.1 s measured on 1.37.2).
func (c *Controller) handOver(ctx context.Context, pod *corev1.Pod, node, why string) error {
	if c.state.Get().Active() {
		return nil // the growth was not sent either
	}
	if c.opts.DryRun {
		ctrl.LoggerFrom(ctx).Info("dry-run: would hand the growth over to scheduler preemption", "dry_run", true, "pod", pod.Name, "node", node)
		return nil
	}
	if err := c.releaseGuard(ctx, node, "hand-over of "+pod.Namespace+"/"+pod.Name); err != nil {
		return err
	}
	c.mu.Lock()
	c.handedOver[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = podMark{uid: pod.UID, at: c.clock.Now()}
	c.mu.Unlock()
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungHandOver), "released").Inc()
	c.events.Publish(ladderEvent(pod, resizeplan.RungHandOver, "guard released for scheduler resize preemption: "+why))
	ctrl.LoggerFrom(ctx).Info("handed the growth over to scheduler preemption", "rung", resizeplan.RungHandOver, "pod", pod.Name, "node", node, "why", why)
	return nil
}

// relocate is rung 3: the Relocator (Understudy) takes over when it is set and accepts.
func (c *Controller) relocate(ctx context.Context, pod *corev1.Pod, ts []resizeplan.ContainerTarget, why string) (bool, error) {
	if c.opts.Relocator == nil {
		return false, nil
	}
	want := resizeplan.Planned(pod, resizeplan.Overrides(ts)).List()
	if c.opts.DryRun {
		// A relocation scales a Deployment: nothing is sent in dry-run (SPEC §10.3).
		ctrl.LoggerFrom(ctx).Info("dry-run: would hand the growth to relocation", "dry_run", true, "rung", resizeplan.RungRelocate, "pod", pod.Name, "why", why)
		c.metrics.Ladder.WithLabelValues(string(resizeplan.RungRelocate), "dry_run").Inc()
		return true, nil
	}
	took, err := c.opts.Relocator.Relocate(ctx, pod, want, why)
	switch {
	case err != nil:
		c.metrics.Ladder.WithLabelValues(string(resizeplan.RungRelocate), "error").Inc()
		return false, fmt.Errorf("relocating %s/%s: %w", pod.Namespace, pod.Name, err)
	case took:
		c.metrics.Ladder.WithLabelValues(string(resizeplan.RungRelocate), "accepted").Inc()
		c.events.Publish(ladderEvent(pod, resizeplan.RungRelocate, "handed to relocation: "+why))
		ctrl.LoggerFrom(ctx).Info("growth handed to relocation", "rung", resizeplan.RungRelocate, "pod", pod.Name)
	default:
		c.metrics.Ladder.WithLabelValues(string(resizeplan.RungRelocate), "declined").Inc()
	}
	return took, nil
}

func milli(v int64) string { return fmt.Sprintf("%dm", v) }
func mib(v int64) string   { return fmt.Sprintf("%dMi", (v+(1<<20)-1)>>20) }
