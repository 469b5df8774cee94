package policy

import (
	"time"
)

// Metric is one metrics[] entry of a compiled policy, parsed: the only form in which
// recommend reads a policy's metrics.
type Metric struct {
	Resource    string // ResourceCPU, ResourceMemory or ResourceEphemeralStorage
	Field       string // FieldRequest or FieldLimit
	Source      string // MetricsSource name
	Aggregation string // p50, p75, p90, p95, p99, max or avg
	// Headroom is the multiplier; a blank headroom is 1.0.
	Headroom Decimal
}

// Readiness are the readiness settings of SPEC §4.3, parsed, with the resolve-time
// defaults applied.
type Readiness struct {
	MinDataPoints int64
	MinTimeSpan   time.Duration
	MaxCV         Decimal
	// CVMeanFloor maps a resource to its floor in whole units: millicores for cpu
	// (floor × 1000), bytes otherwise (a fraction of a unit rounds up). A missing entry
	// means no floor for that resource; an entry of 0 means the CV gate always applies.
	// A blank entry as written ("") is a missing entry.
	CVMeanFloor map[string]int64
}

// Resize are the resize settings of SPEC §8.3, parsed, with the resolve-time defaults
// applied.
type Resize struct {
	// Interval is behaviors.resize.interval.
	Interval time.Duration
	// MaxChangePerCycle is behaviors.resize.maxChangePerCycle in percent, in (0, 100].
	MaxChangePerCycle Decimal
	// Cooldown is behaviors.resize.cooldown (default 1h): no shrink of a workload this long
	// after an OOM kill, a pressure raise or a raise-back of it.
	Cooldown time.Duration
	// PerWorkload is behaviors.resize.maxConcurrentResizes.perWorkload (default 10%).
	PerWorkload IntOrPercent
	// PerNode is behaviors.resize.maxConcurrentResizes.perNode; 0 means no cap.
	PerNode int32

	// The written thresholds, in percent; the zero Decimal where blank.
	defaultThreshold Decimal                   // behaviors.thresholds.default
	resizeDefault    Decimal                   // behaviors.thresholds.resize.default
	perField         map[string]fieldThreshold // resourceThresholds
}

type fieldThreshold struct{ request, limit Decimal }

// Threshold returns the drift threshold, in percent, of (resource, field) for resize
// (SPEC §8.3): the first value written of
// thresholds.resize.resourceThresholds[resource].request|limit, thresholds.resize.default,
// thresholds.default, and finally 10%. Every written threshold of a compiled policy is
// > 0 (SPEC §3.3), so "first written" is "first usable". field is FieldRequest or
// FieldLimit.
func (r Resize) Threshold(resource, field string) Decimal {
	var perField Decimal
	if ft, ok := r.perField[resource]; ok {
		switch field {
		case FieldRequest:
			perField = ft.request
		case FieldLimit:
			perField = ft.limit
		}
	}
	for _, d := range [...]Decimal{perField, r.resizeDefault, r.defaultThreshold} {
		if d.Sign() > 0 {
			return d
		}
	}
	return defaultThreshold
}

// Runtime is spec.runtime, parsed (SPEC addition in docs/design-notes.md "Runtime memory
// profiles and pod-level resources").
type Runtime struct {
	// Type is generic, jvm, go, node, python or auto; blank is generic.
	Type string
	// Margin is the percentage added to a runtime floor; blank is 5.
	Margin Decimal
}

// Runtime types of spec.runtime.type.
const (
	RuntimeGeneric = "generic"
	RuntimeJVM     = "jvm"
	RuntimeGo      = "go"
	RuntimeNode    = "node"
	RuntimePython  = "python"
	RuntimeAuto    = "auto"
)

// Pod-level modes of spec.podLevel.
const (
	PodLevelKeep = "keep"
	PodLevelSize = "size"
)

// JVMMemoryHeadroom is the default headroom of a jvm policy's memory metrics: a heap the
// collector lets fill before it runs needs more room above the observed peak.
const JVMMemoryHeadroom = "1.25"
