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

// memoryLimitShare is the part of the container's limit the Go heap may use before the
// collector works harder: the rest covers the runtime's own memory, stacks and what is not
// heap, so a process near its limit collects more often instead of being OOM-killed.
const memoryLimitShare = 0.9

// SetMemoryLimit gives the Go runtime a soft memory limit of 90 % of the container's limit
// (MemoryLimitEnv), unless GOMEMLIMIT is set, which the runtime has already applied. It
// returns the limit set (0 when none) and an error for an unusable value, which leaves the
// runtime's default (no limit).
func SetMemoryLimit() (int64, error) {
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
	limit := int64(float64(n) * memoryLimitShare)
	debug.SetMemoryLimit(limit)
	return limit, nil
}
