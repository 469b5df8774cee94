// Package sizing is Ballast's one patch calculator (SPEC §7.3–§7.5, §8.2–§8.3).
//
// It turns (pod, recommendations, policy) into container resource changes and skip
// reasons, shared by the admission webhook and the resize controller so the two cannot
// drift apart. The webhook renders a Result with JSONPatch; the resize controller renders
// a ResizeDecision with ResizePatch.
//
// The package is pure: no clients, no I/O, no logger, no clock. It returns decisions,
// reasons (exported constants used as event reasons and metric attributes), clamp
// records and parse problems; the calling shells log and emit them.
package sizing
