// Package series is the contract between the node agent and the control plane: the
// log-scale histogram that holds a series' samples, the fixed time windows samples are
// aggregated in, every Valkey key name, and the wire encoding of windows and OOM events.
// It is the only code that constructs store keys.
//
// The package is pure: it does no I/O and reads no clock; times are passed in.
//
// Resolution: a histogram answers percentiles with the upper edge of a log-scale bucket
// whose edges grow by GrowthRatio = 2^(1/36) ≈ 1.0194, so a reported percentile is never
// below the exact nearest-rank sample and less than 1.95 % above it (capped at the exact
// maximum). Count, sum, sum of squares, extremes and sample times are exact.
package series
