package series

import (
	"fmt"
	"strconv"
	"time"
)

// OOMEvent is one OOM kill of a container of a profile, as the node agent reports it to the
// profile's stream (OOMKey).
type OOMEvent struct {
	// Container is the killed container's name.
	Container string
	// Pod is "<namespace>/<name>" of the pod.
	Pod string
	// Node is the node name.
	Node string
	// At is when the kill happened (millisecond precision on the wire).
	At time.Time
	// PeakBytes is the container's memory peak before the kill (0 if unknown).
	PeakBytes int64
	// LimitBytes is the container's memory limit at the kill (0 if none).
	LimitBytes int64
	// Kind is the limit that was hit: "container", "pod", "node", or "" when the agent could
	// not tell (cgroup v1 without eBPF: polled counters). Optional on the wire.
	Kind string

	// Victim details, known when the eBPF OOM program saw the kill (all optional on the
	// wire, written only when PID is set).
	// PID is the victim's thread-group id; Comm its command name (≤ 15 bytes).
	PID  uint32
	Comm string
	// RSSBytes is the victim's resident memory at the kill (anon + file + shmem pages).
	RSSBytes int64
	// LimitCgroupID is the inode number of the memory cgroup whose limit was hit (0: none
	// found, a node OOM, or unknown).
	LimitCgroupID uint64
}

// Stream entry field names.
const (
	oomContainer = "container"
	oomPod       = "pod"
	oomNode      = "node"
	oomAt        = "at"
	oomPeak      = "peak"
	oomLimit     = "limit"
	oomKind      = "kind"
	oomPID       = "pid"
	oomComm      = "comm"
	oomRSS       = "rss"
	oomLimitCg   = "limit_cgroup"
)

// Validate checks the fields a consumer relies on.
func (e OOMEvent) Validate() error {
	if e.Container == "" || !validContainer(e.Container) {
		return fmt.Errorf("oom event: container name %q is not a DNS label", e.Container)
	}
	if e.At.IsZero() {
		return fmt.Errorf("oom event of %s: time is missing", e.Container)
	}
	if e.PeakBytes < 0 || e.LimitBytes < 0 || e.RSSBytes < 0 {
		return fmt.Errorf("oom event of %s: peak %d, limit %d and rss %d must be ≥ 0", e.Container, e.PeakBytes, e.LimitBytes, e.RSSBytes)
	}
	return nil
}

// WireFields encodes e as stream entry field/value pairs.
func (e OOMEvent) WireFields() []string {
	f := []string{
		oomContainer, e.Container,
		oomPod, e.Pod,
		oomNode, e.Node,
		oomAt, strconv.FormatInt(e.At.UnixMilli(), 10),
		oomPeak, strconv.FormatInt(e.PeakBytes, 10),
		oomLimit, strconv.FormatInt(e.LimitBytes, 10),
		oomKind, e.Kind,
	}
	if e.PID != 0 {
		f = append(f,
			oomPID, strconv.FormatUint(uint64(e.PID), 10),
			oomComm, e.Comm,
			oomRSS, strconv.FormatInt(e.RSSBytes, 10),
			oomLimitCg, strconv.FormatUint(e.LimitCgroupID, 10))
	}
	return f
}

// DecodeOOMEvent parses a stream entry written by WireFields. Unknown fields are ignored so
// that newer agents may add some.
func DecodeOOMEvent(fields map[string]string) (OOMEvent, error) {
	e := OOMEvent{Container: fields[oomContainer], Pod: fields[oomPod], Node: fields[oomNode], Kind: fields[oomKind]}
	ints := map[string]*int64{oomPeak: &e.PeakBytes, oomLimit: &e.LimitBytes}
	var ms int64
	ints[oomAt] = &ms
	for name, dst := range ints {
		s, ok := fields[name]
		if !ok {
			return OOMEvent{}, fmt.Errorf("decoding oom event: missing field %q", name)
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return OOMEvent{}, fmt.Errorf("decoding oom event: field %q = %q is not an integer", name, s)
		}
		*dst = v
	}
	e.At = time.UnixMilli(ms).UTC()
	if err := decodeVictim(fields, &e); err != nil {
		return OOMEvent{}, err
	}
	if err := e.Validate(); err != nil {
		return OOMEvent{}, fmt.Errorf("decoding %w", err)
	}
	return e, nil
}

// decodeVictim reads the optional victim fields.
func decodeVictim(fields map[string]string, e *OOMEvent) error {
	if s, ok := fields[oomPID]; ok {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("decoding oom event: field %q = %q is not a pid", oomPID, s)
		}
		e.PID = uint32(v)
	}
	e.Comm = fields[oomComm]
	if s, ok := fields[oomRSS]; ok {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("decoding oom event: field %q = %q is not an integer", oomRSS, s)
		}
		e.RSSBytes = v
	}
	if s, ok := fields[oomLimitCg]; ok {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("decoding oom event: field %q = %q is not a cgroup id", oomLimitCg, s)
		}
		e.LimitCgroupID = v
	}
	return nil
}

// Victim describes the victim for logs and event messages ("" when unknown), for example
// "pid 4242 (stress), rss 314572800 bytes".
func (e OOMEvent) Victim() string {
	if e.PID == 0 {
		return ""
	}
	s := "pid " + strconv.FormatUint(uint64(e.PID), 10)
	if e.Comm != "" {
		s += " (" + e.Comm + ")"
	}
	if e.RSSBytes > 0 {
		s += ", rss " + strconv.FormatInt(e.RSSBytes, 10) + " bytes"
	}
	return s
}
