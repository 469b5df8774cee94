package agent

import (
	"fmt"

	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/series"
)

// Plausibility bounds of a sample (SPEC §11: bounded trust). No container uses more than
// its node has: cpu above the node's cores, memory above its memory capacity, ephemeral
// storage above its ephemeral-storage capacity is a reading error (a counter wrapped, a
// kubelet reporting 2^64−1) and is never recorded. While the node's capacity is not known
// the absolute ceilings below apply.
const (
	// cpuRateSlack allows a measured cpu rate slightly above the node's cores: the rate is
	// a counter delta over an interval whose ends are read a few microseconds apart.
	cpuRateSlack = 1.05
	// ceilingMilliCPU (10,000 cores) and ceilingBytes (1 PiB) bound a sample of a node
	// whose capacity is unknown.
	ceilingMilliCPU = 10_000 * 1000
	ceilingBytes    = 1 << 50
)

// Rejection reasons, the reason label of ballast_node_samples_rejected_total.
const (
	rejectAboveCapacity = "above_node_capacity"
	rejectAboveCeiling  = "above_ceiling"
	rejectInvalid       = "invalid"
)

// implausible returns the reason and a message when v of resource cannot be a real
// reading on a node of capacity c, "" when it is plausible.
func implausible(c discovery.Capacity, resource string, v float64) (reason, msg string) {
	limit, known := 0.0, false
	switch resource {
	case series.ResourceCPU:
		limit, known = ceilingMilliCPU, c.MilliCPU > 0
		if known {
			limit = float64(c.MilliCPU) * cpuRateSlack
		}
	case series.ResourceMemory:
		limit, known = ceilingBytes, c.MemoryBytes > 0
		if known {
			limit = float64(c.MemoryBytes)
		}
	default: // ephemeral-storage
		limit, known = ceilingBytes, c.EphemeralStorageBytes > 0
		if known {
			limit = float64(c.EphemeralStorageBytes)
		}
	}
	if v <= limit {
		return "", ""
	}
	if known {
		return rejectAboveCapacity, fmt.Sprintf("above the node's capacity (%.0f)", limit)
	}
	return rejectAboveCeiling, fmt.Sprintf("above the plausible ceiling (%.0f; node capacity unknown)", limit)
}
