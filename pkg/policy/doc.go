// Package policy validates, compiles and resolves ClusterResourcePolicy and ResourcePolicy
// objects (SPEC §2.3, §3.1, §3.3, §3.4), and derives the per-policy values other packages
// read: sampling interval (§4.1) and resize thresholds (§8.3).
//
// The package is pure: callers pass objects, pod facts and lookups in and get results,
// errors and reasons back. Nothing here reads the clock, logs or talks to a server.
package policy
