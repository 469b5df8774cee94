// Package sizing is Ballast's one patch calculator (SPEC §7.3–§7.5, §8.2–§8.3).
//
// Calculate turns (pod, recommendations, Params built from a compiled policy) into a Plan:
// per long-running container, resource and field the current, recommended and target
// value, with the request ≤ limit clamp, the one-unit step-down and the QoS classes
// decided once, in Units (millicores for cpu, bytes otherwise). Two renderers read the
// same Plan, so admission and resize cannot drift apart:
//   - admission (Stepping AtOnce): Admission → Result → JSONPatch;
//   - resize (Stepping Stepped, SPEC §8.3): Resize → ResizeDecision → ResizePatch, after
//     the annotation gate of ResizeGate (EvaluateResize runs all of §8.2).
//
// The package is pure: no clients, no I/O, no logger, no clock. It returns decisions,
// reasons (exported constants used as event reasons and metric attributes), clamp
// records and parse problems; the calling shells log and emit them. Values become
// resource.Quantity only at the edges: ParseRecommendations reads a profile's status,
// ContainerPlan.Changes renders written values for the patches.
package sizing
