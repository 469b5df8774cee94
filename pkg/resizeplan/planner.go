package resizeplan

import (
	"cmp"
	"slices"
)

// NodePod is one pod occupying a node, as the planner sees it.
type NodePod struct {
	// Key is "<namespace>/<name>".
	Key string
	// Held is Accounted(pod): max(spec, allocated, actual) requests.
	Held Resources
	// Priority is spec.priority.
	Priority int32
	// Protected is true when a PodDisruptionBudget covering the pod allows no disruption.
	Protected bool
}

// Proposal is a resize of one enrolled pod on the node: Target is Planned(pod) with the
// proposed requests. Donor proposals are other profiles' pending shrinks, applied only
// when a growth would otherwise not fit (rung 1 of the Deferred ladder).
type Proposal struct {
	Key    string
	Target Resources
	Donor  bool
}

// Node is one node and every pod it holds.
type Node struct {
	Name        string
	Allocatable Resources
	// MaxPods is status.allocatable pods; 0 means unknown (not checked).
	MaxPods int64
	Pods    []NodePod
}

// Decision is what the planner does with one proposal.
type Decision string

const (
	// DecisionSend: a shrink, or a growth that fits in the node's free room now.
	DecisionSend Decision = "send"
	// DecisionAfterDonors: a growth that fits once this pass's shrinks are actuated; the
	// kubelet defers it for the few milliseconds that takes, so it is sent under the guard.
	DecisionAfterDonors Decision = "after_donors"
	// DecisionLadder: a growth that does not fit; it goes to the Deferred ladder instead of
	// being sent blind.
	DecisionLadder Decision = "ladder"
	// DecisionNotNeeded: a donor shrink no growth needed; left to its own profile's cycle.
	DecisionNotNeeded Decision = "not_needed"
)

// Step is the planner's decision for one proposal.
type Step struct {
	Key      string
	Shrink   bool
	Donor    bool
	Decision Decision
	// Need is the growth's increase over what the pod holds (zero for a shrink).
	Need Resources
	// Shortfall is what a Ladder growth lacks even after every shrink; Room is what the
	// node can give it (free plus pending shrinks), the ceiling of rung 4.
	Shortfall, Room Resources
}

// Plan is one node's resizes for one interval.
type Plan struct {
	// Steps: shrinks first (they free room), then growths, higher priority first.
	Steps []Step
	// Free is allocatable − Σ held over every pod on the node, before the plan.
	Free Resources
	// Guard is true when a growth may not fit at once: the guard key must be held first.
	Guard bool
	// AtMaxPods: the node holds maxPods pods, so the 1.37 scheduler counts a Deferred pod
	// twice and resize preemption would always want a victim.
	AtMaxPods bool
}

// PlanNode orders and fits one node's proposals (ARCHITECTURE.md "Resize planner"). Free
// room is allocatable minus what every pod holds, enrolled or not. Shrinks go first.
// Growths, higher priority and then smaller first, go when they fit in free room; when
// they fit only with the room this pass's shrinks will free, they go after the donors
// under the guard; otherwise they go to the ladder. Donor proposals are taken only when a
// growth is on the ladder, largest release first.
func PlanNode(n Node, props []Proposal) Plan {
	held := make(map[string]NodePod, len(n.Pods))
	var total Resources
	for _, p := range n.Pods {
		held[p.Key] = p
		total = total.Add(p.Held)
	}
	plan := Plan{Free: n.Allocatable.Sub(total), AtMaxPods: n.MaxPods > 0 && int64(len(n.Pods)) >= n.MaxPods}
	free, pending := plan.Free, Resources{}

	var shrinks, donors, growths []Step
	release := map[string]Resources{}
	for _, pr := range props {
		cur := held[pr.Key].Held
		need := pr.Target.Sub(cur).Positive()
		release[pr.Key] = cur.Sub(pr.Target).Positive()
		s := Step{Key: pr.Key, Need: need, Shrink: need.IsZero(), Donor: pr.Donor}
		switch {
		case s.Shrink && pr.Donor:
			donors = append(donors, s)
		case s.Shrink:
			shrinks = append(shrinks, s)
		case !pr.Donor: // a donor's growth is its own profile's business
			growths = append(growths, s)
		}
	}
	for i := range shrinks {
		shrinks[i].Decision = DecisionSend
		pending = pending.Add(release[shrinks[i].Key])
	}
	slices.SortFunc(growths, func(a, b Step) int {
		return cmp.Or(cmp.Compare(held[b.Key].Priority, held[a.Key].Priority),
			cmp.Compare(a.Need.MilliCPU, b.Need.MilliCPU), cmp.Compare(a.Need.Bytes, b.Need.Bytes), cmp.Compare(a.Key, b.Key))
	})
	fit := func(g *Step) {
		switch {
		case g.Need.Fits(free):
			g.Decision, free = DecisionSend, free.Sub(g.Need)
		case g.Need.Fits(free.Add(pending)):
			g.Decision = DecisionAfterDonors
			// Take free room first, the rest from pending shrinks.
			fromFree := g.Need.Min(free.Positive())
			free, pending = free.Sub(fromFree), pending.Sub(g.Need.Sub(fromFree))
		default:
			g.Decision = DecisionLadder
		}
		if g.Decision != DecisionLadder {
			pending = pending.Add(release[g.Key]) // a mixed resize frees its shrinking part too
		}
	}
	laddered := false
	for i := range growths {
		fit(&growths[i])
		laddered = laddered || growths[i].Decision == DecisionLadder
	}
	if laddered && len(donors) > 0 {
		slices.SortFunc(donors, func(a, b Step) int {
			ra, rb := release[a.Key], release[b.Key]
			return cmp.Or(cmp.Compare(rb.MilliCPU, ra.MilliCPU), cmp.Compare(rb.Bytes, ra.Bytes), cmp.Compare(a.Key, b.Key))
		})
		for i := range donors {
			donors[i].Decision = DecisionSend
			pending = pending.Add(release[donors[i].Key])
		}
		for i := range growths {
			if growths[i].Decision == DecisionLadder {
				fit(&growths[i])
			}
		}
	} else {
		for i := range donors {
			donors[i].Decision = DecisionNotNeeded
		}
	}
	for i := range growths {
		g := &growths[i]
		if g.Decision == DecisionLadder {
			g.Room = free.Add(pending).Positive()
			g.Shortfall = g.Need.Sub(g.Room).Positive()
		}
		// At maxPods any growth is guarded: should the kubelet defer it after all (its
		// accounting can differ from Ballast's), the scheduler's double count of the pod would
		// always want a victim.
		plan.Guard = plan.Guard || g.Decision != DecisionSend || plan.AtMaxPods
	}
	plan.Steps = append(append(append(plan.Steps, shrinks...), donors...), growths...)
	return plan
}
