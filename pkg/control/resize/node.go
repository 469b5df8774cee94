package resize

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

// nodeView is one node with every pod occupying it, read for one pass.
type nodeView struct {
	node *corev1.Node
	pods []*corev1.Pod
	plan resizeplan.Node
}

// podsOn lists every pod occupying a node, enrolled or not, from the API server (the
// manager's cache holds only enrolled pods).
func (c *Controller) podsOn(ctx context.Context, node string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.api.List(ctx, list, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", node)}); err != nil {
		return nil, fmt.Errorf("listing pods of node %s: %w", node, err)
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		if resizeplan.Counted(&list.Items[i]) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// view reads a node for planning; nil when the node is gone.
func (c *Controller) view(ctx context.Context, name string) (*nodeView, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, ctrlKey(name), node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	pods, err := c.podsOn(ctx, name)
	if err != nil {
		return nil, err
	}
	protected, err := c.protected(ctx, pods)
	if err != nil {
		return nil, err
	}
	v := &nodeView{node: node, pods: pods, plan: resizeplan.Node{Name: name, Allocatable: resizeplan.FromList(node.Status.Allocatable)}}
	if q, ok := node.Status.Allocatable[corev1.ResourcePods]; ok {
		v.plan.MaxPods = q.Value()
	}
	for _, p := range pods {
		var prio int32
		if p.Spec.Priority != nil {
			prio = *p.Spec.Priority
		}
		k := p.Namespace + "/" + p.Name
		v.plan.Pods = append(v.plan.Pods, resizeplan.NodePod{Key: k, Held: resizeplan.Accounted(p, nil), Priority: prio, Protected: protected[k]})
	}
	return v, nil
}

// protected marks the pods covered by a PodDisruptionBudget that allows no disruption now
// (scheduler resize preemption deletes without consulting PDBs, so Ballast does).
func (c *Controller) protected(ctx context.Context, pods []*corev1.Pod) (map[string]bool, error) {
	out := map[string]bool{}
	byNS := map[string][]*corev1.Pod{}
	for _, p := range pods {
		byNS[p.Namespace] = append(byNS[p.Namespace], p)
	}
	for ns, nsPods := range byNS {
		pdbs, err := c.pdbsIn(ctx, ns)
		if err != nil {
			return nil, err
		}
		for _, b := range pdbs {
			if b.pdb.Status.DisruptionsAllowed > 0 {
				continue
			}
			for _, p := range nsPods {
				if b.sel.Matches(labels.Set(p.Labels)) {
					out[p.Namespace+"/"+p.Name] = true
				}
			}
		}
	}
	return out, nil
}

// selectedPDB is a PodDisruptionBudget with its parsed selector.
type selectedPDB struct {
	pdb policyv1.PodDisruptionBudget
	sel labels.Selector
}

// pdbsIn lists the namespace's PodDisruptionBudgets from the API server (a PDB's
// disruptionsAllowed must be current); one with an unparsable or empty selector covers no
// pod and is left out.
func (c *Controller) pdbsIn(ctx context.Context, ns string) ([]selectedPDB, error) {
	list := &policyv1.PodDisruptionBudgetList{}
	if err := c.api.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets of %s: %w", ns, err)
	}
	var out []selectedPDB
	for _, pdb := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		out = append(out, selectedPDB{pdb: pdb, sel: sel})
	}
	return out, nil
}

// planNode plans and sends one node's resizes of one profile (ARCHITECTURE.md "Resize
// planner"); requeue is true after a 409.
func (c *Controller) planNode(ctx context.Context, pc *profileCtx, name string, own []proposal) (bool, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("node", name, "profile", pc.profile.Name)
	c.mu.Lock()
	c.planning[name]++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.planning[name]--; c.planning[name] <= 0 {
			delete(c.planning, name)
		}
		c.mu.Unlock()
	}()
	if snap := c.state.Get(); snap.Active() {
		c.state.Suppress(log, snap, config.ActionResize, "kill switch active, no resize issued on the node")
		return false, nil
	}
	v, err := c.view(ctx, name)
	if err != nil || v == nil {
		return false, err
	}
	props, byKey := c.proposals(v, own)
	plan := resizeplan.PlanNode(v.plan, props)
	if laddered(plan) {
		// Rung 1: other enrolled pods' pending shrinks on this node, now.
		donors := c.donors(ctx, v, pc.profile.Name)
		if len(donors) > 0 {
			more, moreKeys := c.proposals(v, donors)
			for k, p := range moreKeys {
				byKey[k] = p
			}
			plan = resizeplan.PlanNode(v.plan, append(props, more...))
		}
	}
	for _, d := range []resizeplan.Decision{resizeplan.DecisionSend, resizeplan.DecisionAfterDonors, resizeplan.DecisionLadder} {
		n := 0
		for _, s := range plan.Steps {
			if s.Decision == d {
				n++
			}
		}
		c.metrics.Planned.WithLabelValues(string(d)).Add(float64(n))
	}
	guarded := false
	if plan.Guard {
		needed, err := c.holdGuard(ctx, v.node)
		if err != nil {
			log.Error(err, "not sending growths that may not fit without the guard")
		}
		guarded = needed && err == nil
		if !needed {
			guarded = true // preemption cannot fire here: nothing to guard against
		}
	}
	requeue := false
	nb := newNodeBudget(v)
	for _, s := range plan.Steps {
		p := byKey[s.Key]
		var again bool
		if s.Decision == resizeplan.DecisionNotNeeded {
			continue
		}
		// The disruption budget and rate limits (budget.go): a hold waits for the next pass.
		held, commit, err := c.hold(ctx, p, nb)
		if err != nil {
			return requeue, err
		}
		if held {
			continue
		}
		gen := p.pod.Generation
		switch {
		case s.Decision == resizeplan.DecisionSend && (s.Shrink || guarded || !plan.AtMaxPods):
			again, err = c.send(ctx, p, p.changes, p.clamps)
		case !guarded:
			log.Info("growth held back: the guard could not be taken", "pod", s.Key)
			continue
		case s.Decision == resizeplan.DecisionAfterDonors:
			if again, err = c.send(ctx, p, p.changes, p.clamps); !again && err == nil {
				c.events.Publish(ladderEvent(p.pod, resizeplan.RungDonors, "sent after the shrinks of other pods on the node, which make room once actuated"))
				c.metrics.Ladder.WithLabelValues(string(resizeplan.RungDonors), "after_donors").Inc()
			}
		default:
			again, err = c.climb(ctx, v, plan, s, p)
		}
		requeue = requeue || again
		if err != nil {
			return requeue, err
		}
		if p.pod.Generation != gen { // sent: it counts against the budget
			commit()
		}
	}
	if !plan.Guard {
		return requeue, c.releaseIfIdle(ctx, name, 1)
	}
	return requeue, nil
}

func laddered(p resizeplan.Plan) bool {
	for _, s := range p.Steps {
		if s.Decision == resizeplan.DecisionLadder {
			return true
		}
	}
	return false
}

// proposals converts pod proposals into planner input.
func (c *Controller) proposals(v *nodeView, ps []proposal) ([]resizeplan.Proposal, map[string]proposal) {
	out := make([]resizeplan.Proposal, 0, len(ps))
	byKey := make(map[string]proposal, len(ps))
	for _, p := range ps {
		byKey[p.key()] = p
		out = append(out, resizeplan.Proposal{Key: p.key(), Target: resizeplan.Planned(p.pod, resizeplan.Overrides(p.targets())), Donor: p.donor})
	}
	return out, byKey
}

// donors evaluates the other profiles' resize-mode pods on the node; the planner takes
// their shrinks only.
func (c *Controller) donors(ctx context.Context, v *nodeView, profile string) []proposal {
	var out []proposal
	for _, pod := range v.pods {
		ref := pod.Annotations[ballastv1.ProfileRefAnnotation]
		if ref == "" || ref == profile || pod.Labels[ballastv1.ModeLabel] != ballastv1.ModeResize ||
			pod.Status.Phase != corev1.PodRunning || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		pc, ok := c.profileOf(ctx, pod)
		if !ok {
			continue
		}
		if p, ok := c.evaluate(ctx, pc, pod); ok {
			p.donor, p.why = true, "donor"
			out = append(out, p)
		}
	}
	return out
}
