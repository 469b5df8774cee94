// Package recommend turns usage distributions into the statistics, readiness verdicts and
// recommendations of a WorkloadProfile (SPEC §4, §5), and raises memory recommendations
// after an OOM kill.
//
// The package is pure: it reads no clock, store or API server. Callers pass the time of
// the computation and the distributions they read; everything here is a function of its
// arguments. Values are in integer units throughout: millicores for cpu, bytes for every
// other resource. They become strings only when rendered into the status (format.go).
package recommend

import (
	"fmt"
	"time"
)

// Distribution is the merged history of one series over the retention window. Values are
// millicores for cpu and bytes otherwise. Count, Sum and SumSquares are exact; Quantile and
// Max may come from a histogram, within its stated resolution and never below the exact
// value (SPEC §4.2).
type Distribution interface {
	Count() int64
	Sum() float64
	SumSquares() float64
	Max() float64
	Quantile(p float64) float64 // nearest rank, p in (0,100]
	FirstSeen() time.Time
	LastSeen() time.Time
}

// Resource names Ballast measures.
const (
	ResourceCPU              = "cpu"
	ResourceMemory           = "memory"
	ResourceEphemeralStorage = "ephemeral-storage"
)

// Fields a metric can target.
const (
	FieldRequest = "request"
	FieldLimit   = "limit"
)

// Aggregations of metrics[].aggregation.
const (
	AggregationP50 = "p50"
	AggregationP75 = "p75"
	AggregationP90 = "p90"
	AggregationP95 = "p95"
	AggregationP99 = "p99"
	AggregationMax = "max"
	AggregationAvg = "avg"
)

// Reasons of a FieldError, spelled as the policy Valid condition reasons of SPEC §3.3.
const (
	ReasonInvalidResource    = "InvalidResource"
	ReasonInvalidAggregation = "InvalidAggregation"
	ReasonInvalidHeadroom    = "InvalidHeadroom"
	ReasonInvalidQuantity    = "InvalidQuantity"
	ReasonInvalidDuration    = "InvalidDuration"
	ReasonInvalidNumber      = "InvalidNumber"
)

// FieldError reports a policy field this package cannot use. Its message has the shape of
// the Valid condition message: `metrics[2].headroom "0": must be a decimal > 0`.
type FieldError struct {
	Reason string // one of the Reason* constants
	Field  string // path inside the policy spec, e.g. metrics[2].headroom
	Value  string // the offending value as written
	Detail string // what was expected
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Detail)
}

// KnownResource reports whether r is a resource Ballast measures.
func KnownResource(r string) bool {
	return r == ResourceCPU || r == ResourceMemory || r == ResourceEphemeralStorage
}
