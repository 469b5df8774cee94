// Package recommend turns usage distributions into the statistics, readiness verdicts and
// recommendations of a WorkloadProfile (SPEC §4, §5), and raises memory recommendations
// after an OOM kill.
//
// The package is pure: it reads no clock, store or API server. Callers pass the time of
// the computation, the distributions they read and the compiled policy (policy.Compile is
// the only parser of policy values; nothing here reads a policy spec, so a policy that
// validates always computes); everything here is a function of its arguments. Values are in integer units throughout: millicores for cpu, bytes for every
// other resource. They become strings only when rendered into the status (format.go).
package recommend

import (
	"time"

	"github.com/ballastk8s/ballast/pkg/policy"
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

// Resource names Ballast measures (the policy package's spelling).
const (
	ResourceCPU              = policy.ResourceCPU
	ResourceMemory           = policy.ResourceMemory
	ResourceEphemeralStorage = policy.ResourceEphemeralStorage
)

// Fields a metric can target.
const (
	FieldRequest = policy.FieldRequest
	FieldLimit   = policy.FieldLimit
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
