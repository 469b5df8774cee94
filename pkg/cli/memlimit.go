package cli

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
)

// MemoryLimitEnv is the environment variable the chart fills with the container's memory
// limit in bytes (the downward API's limits.memory).
const MemoryLimitEnv = "BALLAST_CONTAINER_MEMORY_LIMIT"

// runtimeShare is the part of the container's limit kept from the Go heap for the
// runtime's own memory, stacks and what is not heap, so a process near its limit collects
// more often instead of being OOM-killed.
const runtimeShare = 0.1

// ControlProgramPages is what the kernel charges ballast-control's container for its own
// program: the code and tables it pages in from the executable (48 MiB measured at 20,000
// enrolled pods, docs/benchmarks.md). They count against the container's limit like the
// heap; a heap that leaves them no room evicts them, and the process stalls on page faults
// without ever being OOM-killed.
const ControlProgramPages = 48 << 20

// SetMemoryLimit gives the Go runtime a soft memory limit of the container's limit
// (MemoryLimitEnv) less 10 % for the runtime and less program, the executable's pages it
// keeps resident (ControlProgramPages for ballast-control, 0 to reserve nothing for them),
// but at least half the container's limit; unless GOMEMLIMIT is set, which the runtime has
// already applied. It returns the limit set (0 when none) and an error for an unusable
// value, which leaves the runtime's default (no limit).
func SetMemoryLimit(program int64) (int64, error) {
	v, ok := os.LookupEnv(MemoryLimitEnv)
	if !ok || v == "" {
		return 0, nil
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes", MemoryLimitEnv, v)
	}
	limit := max(n-int64(float64(n)*runtimeShare)-max(program, 0), n/2)
	debug.SetMemoryLimit(limit)
	return limit, nil
}
