// Package resizeplan is the pure planning of the resize controller (SPEC §8–§9,
// ARCHITECTURE.md "Resize planner", "Resize outcomes and the Deferred ladder", "Fast
// raises"): what a pod holds on its node (accounting.go), one node's plan (planner.go),
// the Deferred ladder's decisions (ladder.go: hand-over; cap.go: the rung-4 cap), the
// outcome state machine (outcome.go), the runs of sustained memory pressure (pressure.go),
// and the target math of caps, reverts and fast raises (targets.go, raiseback.go), built
// on pkg/sizing's container helpers.
//
// Like pkg/sizing it does no I/O and never reads the clock: callers pass pods, nodes and
// times in. `make lint` (hack/checkdeps) enforces it.
package resizeplan
