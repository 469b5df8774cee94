package resize

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
