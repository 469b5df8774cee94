// Package debug is ballast-node's debugging endpoint: what the agent sees on its node, per
// pod and container (cgroup paths, last samples per signal, source errors, OOM counts),
// the contents of every series window it holds, and the state of its buffer and of Valkey;
// as JSON or as plain text for a terminal (?format=text, or Accept: text/plain).
//
// The endpoint reveals workload data, so the handler is meant to be wrapped by Auth, which
// authenticates the caller's bearer token with a TokenReview and authorizes the request
// path with a SubjectAccessReview (as the kubelet and metrics endpoints do).
package debug

import "time"

// Report is everything the endpoint shows.
type Report struct {
	Node    string         `json:"node"`
	Time    time.Time      `json:"time"`
	Config  ConfigReport   `json:"config"`
	Store   StoreReport    `json:"store"`
	Buffer  BufferReport   `json:"buffer"`
	Sources []SourceReport `json:"sources"`
	Pods    []PodReport    `json:"pods"`
	Series  []SeriesReport `json:"series"`
	// OOMQueued are OOM events waiting to be written (store unreachable, or pod not bound yet).
	OOMQueued int `json:"oomQueued"`
}

// ConfigReport is what discovery knows about the cluster configuration.
type ConfigReport struct {
	Synced             bool   `json:"synced"`
	BallastConfigFound bool   `json:"ballastConfigFound"`
	Retention          string `json:"retention"`
	// Paused says why nothing is sampled, empty while sampling.
	Paused string `json:"paused,omitempty"`
}

// StoreReport is the state of the Valkey connection and of the last flushes.
type StoreReport struct {
	URL                 string    `json:"url"`
	Connected           bool      `json:"connected"`
	LastFlush           time.Time `json:"lastFlush,omitzero"`
	LastFlushDuration   string    `json:"lastFlushDuration,omitempty"`
	LastFlushWindows    int       `json:"lastFlushWindows"`
	LastError           string    `json:"lastError,omitempty"`
	LastErrorAt         time.Time `json:"lastErrorAt,omitzero"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	FlushedWindows      int64     `json:"flushedWindows"`
	FlushedSamples      int64     `json:"flushedSamples"`
	// Full: the last flush was refused because the store is at its maxmemory.
	Full bool `json:"full,omitempty"`
}

// BufferReport is the local buffer's fill and drops.
type BufferReport struct {
	Filed          int              `json:"filed"`
	FiledLimit     int              `json:"filedLimit"`
	Pending        int              `json:"pending"`
	PendingLimit   int              `json:"pendingLimit"`
	Dropped        map[string]int64 `json:"dropped"`
	DroppedSamples map[string]int64 `json:"droppedSamples"`
}

// SourceReport is the health of one signal source (cgroup, kubelet, oom).
type SourceReport struct {
	Name         string    `json:"name"`
	Detail       string    `json:"detail"`
	LastRun      time.Time `json:"lastRun,omitzero"`
	LastDuration string    `json:"lastDuration,omitempty"`
	Runs         int64     `json:"runs"`
	Errors       int64     `json:"errors"`
	LastError    string    `json:"lastError,omitempty"`
	LastErrorAt  time.Time `json:"lastErrorAt,omitzero"`
}

// PodReport is one enrolled pod of the node.
type PodReport struct {
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	UID         string `json:"uid"`
	Mode        string `json:"mode"`
	QOS         string `json:"qos"`
	ProfileRef  string `json:"profileRef,omitempty"`
	PolicyRef   string `json:"policyRef,omitempty"`
	Hash        string `json:"measurementHash,omitempty"`
	Interval    string `json:"interval"`
	Terminating bool   `json:"terminating,omitempty"`
	// Unbound: samples are kept pending until the pod is stamped and its profile has a hash.
	Unbound bool `json:"unbound,omitempty"`
	// ProfileRefIgnored: the profile-ref names a profile the pod's own labels and namespace
	// do not resolve to, so it is not used (the pod is held as unbound).
	ProfileRefIgnored bool              `json:"profileRefIgnored,omitempty"`
	Containers        []ContainerReport `json:"containers"`
}

// ContainerReport is one long-running container.
type ContainerReport struct {
	Name         string           `json:"name"`
	ContainerID  string           `json:"containerID,omitempty"`
	Sidecar      bool             `json:"sidecar,omitempty"`
	CgroupCPU    string           `json:"cgroupCPU,omitempty"`
	CgroupMemory string           `json:"cgroupMemory,omitempty"`
	OOMWatched   bool             `json:"oomWatched"`
	Last         []SampleReport   `json:"last"`
	Errors       []ErrorReport    `json:"errors,omitempty"`
	OOMKills     map[string]int64 `json:"oomKills,omitempty"`
	// ReclaimStall is the eBPF memory-pressure reading (--ebpf): limit-reclaim stall of the
	// container's memory cgroup over the last cycle.
	ReclaimStall *StallReport `json:"reclaimStall,omitempty"`
	// MemoryPressure is the last memory-pressure reading (PSI on cgroup v2, else the
	// reclaim stall), as written to the profile's pressure stream when ≥ 1 %.
	MemoryPressure *PressureReport `json:"memoryPressure,omitempty"`
}

// PressureReport is one memory-pressure reading: stall µs per second over Interval.
type PressureReport struct {
	At          time.Time `json:"at"`
	Interval    string    `json:"interval"`
	StallPerSec int64     `json:"stallPerSec"`
	Source      string    `json:"source"`
}

// StallReport is one reclaim-stall reading of the eBPF source.
type StallReport struct {
	MemcgID        uint64    `json:"memcgID"`
	At             time.Time `json:"at"`
	Interval       string    `json:"interval"`
	Passes         uint64    `json:"passes"`
	Stalled        string    `json:"stalled"`
	Fraction       float64   `json:"fraction"`
	MaxPass        string    `json:"maxPass"`
	ReclaimedPages uint64    `json:"reclaimedPages"`
	TotalPasses    uint64    `json:"totalPasses"`
	TotalStalled   string    `json:"totalStalled"`
}

// SampleReport is the last recorded sample of one signal.
type SampleReport struct {
	// Signal is "<resource>/<signal>", e.g. cpu/usage, memory/peak.
	Signal string    `json:"signal"`
	Value  float64   `json:"value"`
	Source string    `json:"source"`
	At     time.Time `json:"at"`
	// Exact is false for a memory peak that is the max of samples (no resettable memory.peak).
	Exact *bool `json:"exact,omitempty"`
}

// ErrorReport is the last error of one source for a container.
type ErrorReport struct {
	Source  string    `json:"source"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
	Count   int64     `json:"count"`
}

// SeriesReport is one series the agent wrote to or holds for.
type SeriesReport struct {
	// Profile is the measurementHash; Pod is set instead for samples of an unbound pod.
	Profile   string `json:"profile,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container"`
	Resource  string `json:"resource"`
	Signal    string `json:"signal"`
	// Recorded counts samples taken into this series since the agent started; Flushed the
	// ones written to Valkey.
	Recorded int64          `json:"recorded"`
	Flushed  int64          `json:"flushed"`
	Windows  []WindowReport `json:"windows,omitempty"`
}

// WindowReport summarises one held (not yet written) window.
type WindowReport struct {
	Start time.Time `json:"start"`
	Count int64     `json:"count"`
	Min   float64   `json:"min"`
	Max   float64   `json:"max"`
	Mean  float64   `json:"mean"`
	P50   float64   `json:"p50"`
	P95   float64   `json:"p95"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// Filter narrows a report to one pod ("<namespace>/<name>"); empty means everything.
type Filter struct {
	Pod string
}
