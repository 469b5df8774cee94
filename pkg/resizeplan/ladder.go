package resizeplan

// Rung is a step of the Deferred ladder (ARCHITECTURE.md "Resize outcomes and the Deferred
// ladder"). It is an attribute of ballast_resize_ladder_total and named in events and logs.
type Rung string

const (
	// RungGuard (0): Ballast's key is held in the node's disableResizePreemption before a
	// growth that may not fit, so the scheduler cannot preempt neighbours for it.
	RungGuard Rung = "guard"
	// RungDonors (1): other enrolled pods' pending shrinks on the node are applied now.
	RungDonors Rung = "donors"
	// RungHandOver (2): the key is released so scheduler resize preemption picks victims,
	// only when every possible victim is acceptable.
	RungHandOver Rung = "hand_over"
	// RungRelocate (3): the pod is handed to a Relocator (Understudy), when one is set.
	RungRelocate Rung = "relocate"
	// RungCap (4): the target is capped at what the node can ever hold.
	RungCap Rung = "cap"
	// RungGiveUp: a rung timed out and nothing else applies; the resize is reverted.
	RungGiveUp Rung = "give_up"
)

// HandOverInput is what rung 2 checks before letting scheduler resize preemption act.
type HandOverInput struct {
	Node Node
	// Target is the Deferred pod.
	Target NodePod
	// PreemptionNever is true when the pod's preemptionPolicy is Never.
	PreemptionNever bool
	// Shortfall is what the growth lacks once every shrink is actuated.
	Shortfall Resources
	// OtherOwners are the keys of disableResizePreemption that are not Ballast's.
	OtherOwners []string
	// DonorsInFlight is true while a donor shrink on the node has not been actuated.
	DonorsInFlight bool
}

// HandOver decides rung 2: the guard key may be released only when scheduler preemption
// can resolve the growth and every pod it could delete is acceptable. The scheduler picks
// victims among pods of strictly lower priority and deletes them without honouring
// PodDisruptionBudgets, so Ballast checks them itself: one protected candidate is enough
// to refuse.
func HandOver(in HandOverInput) (ok bool, reason string) {
	switch {
	case in.PreemptionNever:
		return false, "the pod's preemptionPolicy is Never"
	case len(in.OtherOwners) > 0:
		return false, "resize preemption is disabled on the node by " + in.OtherOwners[0]
	case in.Node.MaxPods > 0 && int64(len(in.Node.Pods)) >= in.Node.MaxPods && in.DonorsInFlight:
		return false, "the node is at maxPods and a donor shrink is still in flight"
	}
	var victims Resources
	n := 0
	for _, p := range in.Node.Pods {
		if p.Key == in.Target.Key || p.Priority >= in.Target.Priority {
			continue
		}
		if p.Protected {
			return false, "pod " + p.Key + " could be preempted but a PodDisruptionBudget allows no disruption"
		}
		victims, n = victims.Add(p.Held), n+1
	}
	switch {
	case n == 0:
		return false, "no pod of lower priority on the node"
	case !in.Shortfall.Fits(victims):
		return false, "preempting every lower-priority pod would not free enough"
	}
	return true, ""
}
