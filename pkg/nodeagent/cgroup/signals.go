package cgroup

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Rate errors. A reading pair that yields one of these produces no cpu sample: a missed
// reading is skipped, never invented (SPEC §4.1).
var (
	// ErrCounterReset: the cumulative usage went backwards (the cgroup was recreated, for
	// example by a container restart that kept its ID, or the counter wrapped).
	ErrCounterReset = errors.New("cpu usage counter went backwards")
	// ErrNoElapsedTime: the second reading is not later than the first.
	ErrNoElapsedTime = errors.New("no time elapsed between cpu readings")
	// ErrRateOutOfRange: the rate does not fit in an int64 of millicores (garbage input).
	ErrRateOutOfRange = errors.New("cpu rate out of range")
)

// CPUCounter is one reading of a cgroup's cumulative cpu time: cpu.stat usage_usec × 1000
// on v2, cpuacct.usage on v1.
type CPUCounter struct {
	UsageNanos uint64
	Time       time.Time
}

// MilliCPU is the one function that turns two cumulative cpu readings into a usage rate,
// in millicores (1000 = one core busy for the whole interval). The result is rounded up,
// like the Quantity.MilliValue of the nanocore value metrics.k8s.io serves, so any
// non-zero usage is at least 1m. It never returns a negative rate: a counter that went
// backwards is ErrCounterReset, a non-positive interval ErrNoElapsedTime.
func MilliCPU(prev, cur CPUCounter) (int64, error) {
	elapsed := cur.Time.Sub(prev.Time)
	if elapsed <= 0 {
		return 0, fmt.Errorf("%w: %v → %v", ErrNoElapsedTime, prev.Time, cur.Time)
	}
	if cur.UsageNanos < prev.UsageNanos {
		return 0, fmt.Errorf("%w: %dns → %dns", ErrCounterReset, prev.UsageNanos, cur.UsageNanos)
	}
	// millicores = ceil(Δusage_ns × 1000 / elapsed_ns), in 128-bit arithmetic.
	hi, lo := bits.Mul64(cur.UsageNanos-prev.UsageNanos, 1000)
	d := uint64(elapsed)
	if hi >= d {
		return 0, fmt.Errorf("%w: %dns of cpu in %v", ErrRateOutOfRange, cur.UsageNanos-prev.UsageNanos, elapsed)
	}
	q, r := bits.Div64(hi, lo, d)
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %d millicores", ErrRateOutOfRange, q)
	}
	return int64(q), nil
}

// WorkingSetBytes is the kubelet's (cAdvisor's) working set: memory usage minus inactive
// file pages, floored at 0. On v2 usage is memory.current and inactive is memory.stat
// inactive_file; on v1 memory.usage_in_bytes and memory.stat total_inactive_file.
func WorkingSetBytes(usageBytes, inactiveFileBytes uint64) uint64 {
	if inactiveFileBytes >= usageBytes {
		return 0
	}
	return usageBytes - inactiveFileBytes
}

// usecToNanos converts cpu.stat microseconds to nanoseconds, refusing to wrap.
func usecToNanos(usec uint64) (uint64, error) {
	hi, lo := bits.Mul64(usec, 1000)
	if hi != 0 {
		return 0, fmt.Errorf("%w: usage_usec %d overflows nanoseconds", ErrMalformed, usec)
	}
	return lo, nil
}
