package series

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Agent presence. Every node agent records a heartbeat beside its flushes; the control plane
// reads them all to know which nodes a live agent covers, and measures the enrolled pods of
// the other nodes through metrics.k8s.io instead (the fallback source).
//
//	ballast:{agents}:heartbeats   hash  node name → Heartbeat (JSON)
//	ballast:{agents}:fallback     hash  pod UID → unix ms of the newest fallback sample written
//
// Both keys share the hash tag {agents}, so they live on one cluster slot, apart from every
// profile's slot.

// HeartbeatsKey is the hash of every node agent's heartbeat, keyed by node name.
func HeartbeatsKey() string { return KeyPrefix + ":{agents}:heartbeats" }

// FallbackCursorKey is the hash of the fallback's per-pod cursor: the time of the newest
// metrics.k8s.io sample written for the pod, so a restarted control plane never writes a
// sample twice.
func FallbackCursorKey() string { return KeyPrefix + ":{agents}:fallback" }

// Heartbeat is one node agent's presence record.
//
// The hand-over between the agent and the fallback is decided per sample time, from
// Since and Through: a sample taken at t belongs to the agent when Since ≤ t ≤ Through of a
// live heartbeat; after the heartbeat expired, samples later than its Through belong to the
// fallback; samples later than Through of a live heartbeat are undecided until the agent's
// next heartbeat either covers them or the heartbeat expires. Each sampling instant is
// therefore counted by exactly one path.
type Heartbeat struct {
	// Node is the node name.
	Node string `json:"node"`
	// Version is the agent's version.
	Version string `json:"version,omitempty"`
	// Signals lists what the agent samples (cpu, memory, ephemeral-storage, oom, ...), sorted.
	Signals []string `json:"signals,omitempty"`
	// Since is the time of the agent's first sampling cycle since it started.
	Since time.Time `json:"since"`
	// Through is the time of the newest sampling cycle whose samples are all written to the
	// store; zero until the first flush succeeded.
	Through time.Time `json:"through,omitzero"`
	// At is when the heartbeat was written.
	At time.Time `json:"at"`
	// TTL is how long after At the heartbeat counts as live (a few flush intervals).
	TTL time.Duration `json:"ttl"`
}

// Live reports whether the heartbeat still vouches for its node at now.
func (h Heartbeat) Live(now time.Time) bool { return !now.After(h.At.Add(h.TTL)) }

// Validate checks a heartbeat before it is written or after it is read.
func (h Heartbeat) Validate() error {
	switch {
	case h.Node == "" || len(h.Node) > 253 || strings.ContainsAny(h.Node, " \t\n"):
		return fmt.Errorf("heartbeat: node name %q is invalid", h.Node)
	case h.At.IsZero() || h.Since.IsZero():
		return fmt.Errorf("heartbeat of %s: at and since are required", h.Node)
	case h.TTL <= 0:
		return fmt.Errorf("heartbeat of %s: ttl %v must be > 0", h.Node, h.TTL)
	case !h.Through.IsZero() && h.Through.Before(h.Since):
		return fmt.Errorf("heartbeat of %s: through %s is before since %s", h.Node,
			h.Through.UTC().Format(time.RFC3339), h.Since.UTC().Format(time.RFC3339))
	}
	return nil
}

// Encode renders h for the heartbeats hash.
func (h Heartbeat) Encode() (string, error) {
	if err := h.Validate(); err != nil {
		return "", err
	}
	h.Signals = slices.Clone(h.Signals)
	slices.Sort(h.Signals)
	b, err := json.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("encoding heartbeat of %s: %w", h.Node, err)
	}
	return string(b), nil
}

// DecodeHeartbeat parses one field of the heartbeats hash; node is the field name, which
// must match the record.
func DecodeHeartbeat(node, value string) (Heartbeat, error) {
	var h Heartbeat
	if err := json.Unmarshal([]byte(value), &h); err != nil {
		return Heartbeat{}, fmt.Errorf("decoding heartbeat of %s: %w", node, err)
	}
	if h.Node != node {
		return Heartbeat{}, fmt.Errorf("decoding heartbeat of %s: record names node %q", node, h.Node)
	}
	if err := h.Validate(); err != nil {
		return Heartbeat{}, fmt.Errorf("decoding heartbeat: %w", err)
	}
	return h, nil
}

// Owner says which path measures a sample taken at one instant on a node.
type Owner int

// Owners of a sample.
const (
	// OwnerUndecided: a live agent may still flush it; ask again after its next heartbeat.
	OwnerUndecided Owner = iota
	// OwnerAgent: the node agent measured (or will flush) it; the fallback drops it.
	OwnerAgent
	// OwnerFallback: no live agent covers it; the fallback writes it.
	OwnerFallback
)

func (o Owner) String() string {
	switch o {
	case OwnerAgent:
		return "agent"
	case OwnerFallback:
		return "fallback"
	}
	return "undecided"
}

// OwnerOf decides who measures the sample taken at t on a node whose newest heartbeat is hb
// (known = false when the node never had one) at now. See Heartbeat for the rule.
func OwnerOf(hb Heartbeat, known bool, t, now time.Time) Owner {
	if !known {
		return OwnerFallback
	}
	if hb.Live(now) {
		switch {
		case t.Before(hb.Since):
			return OwnerFallback // before this agent started: a gap only the fallback can fill
		case !hb.Through.IsZero() && !t.After(hb.Through):
			return OwnerAgent
		default:
			return OwnerUndecided
		}
	}
	// Expired: the agent wrote everything up to Through (a later restart starts a new Since).
	if !hb.Through.IsZero() && !t.After(hb.Through) && !t.Before(hb.Since) {
		return OwnerAgent
	}
	return OwnerFallback
}
