// Package doom normalises the signals that a node is being taken away (SPEC §15.3) into one
// type: node, class, deadline when known, source. The adapters are pure functions over the
// objects the controller already has in its cache; this package does no I/O and never reads
// the clock. It holds no provider-specific code: Karpenter's and cluster-autoscaler's taint
// keys are plain strings beside the configured ones.
package doom

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Class says whether a disruption can wait for a stand-in.
type Class string

const (
	// Voluntary disruptions (drain, consolidation, scale-down) retry a held eviction.
	Voluntary Class = "voluntary"
	// Involuntary disruptions (node deletion, out-of-service, spot reclaim) will not wait.
	Involuntary Class = "involuntary"
)

// Sources name the adapter a signal came from (logs, events, status).
const (
	SourceCordon             = "cordon"
	SourceKarpenter          = "taint:" + TaintKarpenterDisrupted
	SourceClusterAutoscaler  = "taint:" + TaintClusterAutoscaler
	SourceNodeDeletion       = "node-deletion"
	SourceOutOfService       = "taint:" + TaintOutOfService
	SourceEviction           = "eviction"
	sourceConfiguredTaintPfx = "taint:"
)

// Taint keys Ballast recognises without configuration.
const (
	TaintKarpenterDisrupted = "karpenter.sh/disrupted"
	TaintClusterAutoscaler  = "ToBeDeletedByClusterAutoscaler"
	TaintOutOfService       = "node.kubernetes.io/out-of-service"
)

// Signal is one normalised doom signal.
type Signal struct {
	Node  string
	Class Class
	// Deadline is when the node goes away, nil when no signal carries one.
	Deadline *time.Time
	Source   string
}

// Keys are the configured extra taint keys (flags --understudy-doom-taints and
// --understudy-involuntary-taints).
type Keys struct {
	Voluntary   []string
	Involuntary []string
}

// ParseKeys splits a comma-separated flag value, dropping blanks.
func ParseKeys(flag string) []string {
	var out []string
	for _, k := range strings.Split(flag, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// FromNode returns every doom signal a node carries, in a stable order. A configured
// taint whose value is an RFC 3339 time carries that time as its deadline (the form a
// spot-interruption handler can write); no other signal has a deadline.
func FromNode(n *corev1.Node, keys Keys) []Signal {
	if n == nil {
		return nil
	}
	var out []Signal
	add := func(c Class, src string, deadline *time.Time) {
		out = append(out, Signal{Node: n.Name, Class: c, Source: src, Deadline: deadline})
	}
	if n.DeletionTimestamp != nil {
		add(Involuntary, SourceNodeDeletion, nil)
	}
	if n.Spec.Unschedulable {
		add(Voluntary, SourceCordon, nil)
	}
	for _, t := range n.Spec.Taints {
		switch {
		case t.Key == TaintOutOfService:
			add(Involuntary, SourceOutOfService, nil)
		case t.Key == TaintKarpenterDisrupted:
			add(Voluntary, SourceKarpenter, nil)
		case t.Key == TaintClusterAutoscaler:
			add(Voluntary, SourceClusterAutoscaler, nil)
		case slices.Contains(keys.Involuntary, t.Key):
			add(Involuntary, sourceConfiguredTaintPfx+t.Key, valueDeadline(t.Value))
		case slices.Contains(keys.Voluntary, t.Key):
			add(Voluntary, sourceConfiguredTaintPfx+t.Key, valueDeadline(t.Value))
		}
	}
	return out
}

// FromEviction is the signal of an eviction request for a protected pod on node.
func FromEviction(node string) Signal {
	return Signal{Node: node, Class: Voluntary, Source: SourceEviction}
}

func valueDeadline(v string) *time.Time {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil
	}
	return &t
}

// Merge folds the signals of one node into the one that governs it: involuntary beats
// voluntary, the earliest deadline is kept whichever signal carried it, and the source is
// the first signal's of the winning class. ok is false when there is no signal.
func Merge(signals []Signal) (s Signal, ok bool) {
	for _, x := range signals {
		if !ok {
			s, ok = x, true
			continue
		}
		if x.Class == Involuntary && s.Class != Involuntary {
			s.Class, s.Source = Involuntary, x.Source
		}
		if x.Deadline != nil && (s.Deadline == nil || x.Deadline.Before(*s.Deadline)) {
			d := *x.Deadline
			s.Deadline = &d
		}
	}
	return s, ok
}

// Held reports whether an eviction under signal s is held in holdMode (SPEC §15.4 step 2):
// always holds every class, voluntary-only holds voluntary ones, off holds none.
func Held(holdMode string, c Class) bool {
	switch holdMode {
	case "always", "":
		return true
	case "voluntary-only":
		return c == Voluntary
	}
	return false
}

// TooClose reports whether a known deadline is less than minSurge away at now (SPEC §15.4
// step 5: the stand-in cannot win, release at once).
func TooClose(s Signal, now time.Time, minSurge time.Duration) bool {
	return s.Deadline != nil && s.Deadline.Sub(now) < minSurge
}
