package series

import (
	"fmt"
	"strconv"
	"time"
)

// Memory pressure of a container is one number whatever the node's kernel offers: the
// stall time per second of wall time, in microseconds (0 … 1,000,000; 100,000 is "10 % of
// the time stalled"). On cgroup v2 it is the change of the "some" total of the container's
// memory.pressure (PSI) over the sampling interval; on cgroup v1 the eBPF programs' memcg
// limit-reclaim stall over the interval (summed over the cgroup's threads, so capped at
// one second per second, which makes it an upper bound of PSI "some").
//
// The node agent writes one PressureReading per container and sampling interval to the
// profile's pressure stream (PressureKey), but only readings of at least PressureFloor:
// an idle container costs the store nothing, and a missing reading means "below the
// floor". Entries carry the pod, so the control plane can raise the one pod under
// pressure instead of the whole profile.
const (
	// StallScale is a full second of stall per second of wall time.
	StallScale = 1_000_000
	// PressureFloor is the least stall written to the stream: 1 % of the time stalled.
	PressureFloor = StallScale / 100
	// PressureMaxLen caps each profile's pressure stream (approximately, XADD MAXLEN ~).
	PressureMaxLen = 2000
	// PressureTTL is how long a pressure stream outlives its newest entry: readings are
	// for fast reactions, not history.
	PressureTTL = time.Hour
)

// Pressure sources (PressureReading.Source).
const (
	PressureSourcePSI  = "psi"
	PressureSourceEBPF = "ebpf"
)

// PressureReading is the memory pressure of one container of a pod over one sampling
// interval ending at At.
type PressureReading struct {
	// Container is the container's name.
	Container string
	// Pod is "<namespace>/<name>" of the pod.
	Pod string
	// Node is the node name.
	Node string
	// At is the end of the interval (millisecond precision on the wire).
	At time.Time
	// Interval is the interval's length (millisecond precision on the wire, > 0).
	Interval time.Duration
	// StallPerSec is the stall in microseconds per second of the interval (0 … StallScale).
	StallPerSec int64
	// Source is PressureSourcePSI or PressureSourceEBPF.
	Source string
}

// Start is the beginning of the interval the reading covers.
func (r PressureReading) Start() time.Time { return r.At.Add(-r.Interval) }

// Fraction is StallPerSec as a share of the time (0 … 1).
func (r PressureReading) Fraction() float64 { return float64(r.StallPerSec) / StallScale }

// StallPerSecond converts a stall measured over an interval into the series' unit,
// truncated and capped at StallScale. A non-positive interval or stall gives 0.
func StallPerSecond(stalled, interval time.Duration) int64 {
	if stalled <= 0 || interval <= 0 {
		return 0
	}
	v := float64(stalled) / float64(interval) * StallScale
	if v >= StallScale {
		return StallScale
	}
	return int64(v)
}

// Stream entry field names.
const (
	prContainer = "container"
	prPod       = "pod"
	prNode      = "node"
	prAt        = "at"
	prInterval  = "interval"
	prStall     = "stall"
	prSource    = "source"
)

// Validate checks the fields a consumer relies on.
func (r PressureReading) Validate() error {
	switch {
	case r.Container == "" || !validContainer(r.Container):
		return fmt.Errorf("pressure reading: container name %q is not a DNS label", r.Container)
	case r.At.IsZero():
		return fmt.Errorf("pressure reading of %s: time is missing", r.Container)
	case r.Interval < time.Millisecond:
		return fmt.Errorf("pressure reading of %s: interval %v must be ≥ 1ms", r.Container, r.Interval)
	case r.StallPerSec < 0 || r.StallPerSec > StallScale:
		return fmt.Errorf("pressure reading of %s: stall %d must be within [0, %d]", r.Container, r.StallPerSec, StallScale)
	case r.Source != PressureSourcePSI && r.Source != PressureSourceEBPF:
		return fmt.Errorf("pressure reading of %s: source %q must be %s or %s", r.Container, r.Source,
			PressureSourcePSI, PressureSourceEBPF)
	}
	return nil
}

// WireFields encodes r as stream entry field/value pairs.
func (r PressureReading) WireFields() []string {
	return []string{
		prContainer, r.Container,
		prPod, r.Pod,
		prNode, r.Node,
		prAt, strconv.FormatInt(r.At.UnixMilli(), 10),
		prInterval, strconv.FormatInt(r.Interval.Milliseconds(), 10),
		prStall, strconv.FormatInt(r.StallPerSec, 10),
		prSource, r.Source,
	}
}

// DecodePressureReading parses a stream entry written by WireFields. Unknown fields are
// ignored so that newer agents may add some.
func DecodePressureReading(fields map[string]string) (PressureReading, error) {
	r := PressureReading{Container: fields[prContainer], Pod: fields[prPod], Node: fields[prNode], Source: fields[prSource]}
	var at, iv int64
	for _, f := range []struct {
		name string
		dst  *int64
	}{{prAt, &at}, {prInterval, &iv}, {prStall, &r.StallPerSec}} {
		s, ok := fields[f.name]
		if !ok {
			return PressureReading{}, fmt.Errorf("decoding pressure reading: missing field %q", f.name)
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return PressureReading{}, fmt.Errorf("decoding pressure reading: field %q = %q is not an integer", f.name, s)
		}
		*f.dst = v
	}
	if iv < 0 || iv > int64(24*time.Hour/time.Millisecond) {
		return PressureReading{}, fmt.Errorf("decoding pressure reading: interval %dms out of range", iv)
	}
	r.At, r.Interval = time.UnixMilli(at).UTC(), time.Duration(iv)*time.Millisecond
	if err := r.Validate(); err != nil {
		return PressureReading{}, fmt.Errorf("decoding %w", err)
	}
	return r, nil
}
