// Package identity computes the identity of an enrolled pod (SPEC §3.2, §3.5–§3.7, §11.1):
// the identity tuple, the WorkloadProfile name, the policy discriminator, the store
// measurementHash and the profile attributes of metrics.
//
// The package is pure: every function is deterministic over its arguments. Admission and the
// enrollment controller call the same functions, so they cannot disagree about a pod.
package identity
