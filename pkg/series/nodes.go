package series

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Node attribution. Besides its histogram, a window hash carries a small tally per node
// that wrote into it: fields "n:<node>:c" (the node's samples) and "n:<node>:s" (their sum,
// rounded to a whole unit per window, so both fields are plain integer adds, HINCRBY, and
// commute like every other field). A window has as many tallies as nodes wrote it; windows
// written before attribution, or by the control plane's fallback source, have none.
//
// The node name is what the writing agent says it is (its --node-name): a node's root can
// claim another node's name, but only within the keys its store credentials may write.
const (
	FieldNodePrefix = "n:"
	nodeCountSuffix = ":c"
	nodeSumSuffix   = ":s"
	// maxNodeName is a Kubernetes object name's limit (a DNS subdomain).
	maxNodeName = 253
)

// NodeTally is what one node contributed to a series: its samples and their sum (each
// rounded to a whole millicore or byte).
type NodeTally struct {
	Node string
	N    int64
	Sum  float64
}

// Mean is the node's mean sample (0 without samples).
func (t NodeTally) Mean() float64 {
	if t.N <= 0 {
		return 0
	}
	return t.Sum / float64(t.N)
}

// CheckNodeName accepts a node name that can be carried in a field name: a DNS subdomain
// (lowercase letters, digits, '-' and '.'), at most 253 characters.
func CheckNodeName(name string) error {
	if name == "" || len(name) > maxNodeName {
		return fmt.Errorf("node name %q: must be 1 to %d characters", name, maxNodeName)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return fmt.Errorf("node name %q: must be a DNS subdomain (lowercase letters, digits, '-', '.')", name)
		}
	}
	return nil
}

// NodeFields are the field/value pairs that attribute h's samples to node (both added with
// OpAdd). Empty when node is "" or h has no samples.
func NodeFields(node string, h *Histogram) []string {
	if node == "" || h == nil || h.N == 0 {
		return nil
	}
	return []string{
		FieldNodePrefix + node + nodeCountSuffix, strconv.FormatInt(h.N, 10),
		FieldNodePrefix + node + nodeSumSuffix, strconv.FormatInt(int64(math.Round(h.Total)), 10),
	}
}

// isNodeField reports whether a hash field is a node tally (Decode skips those).
func isNodeField(f string) bool { return strings.HasPrefix(f, FieldNodePrefix) }

// DecodeNodes reads the node tallies of a window hash, sorted by node. A hash without any
// has none. A malformed tally field is an error; a node with a count but no sum (or the
// reverse) too.
func DecodeNodes(fields map[string]string) ([]NodeTally, error) {
	var out []NodeTally
	at := func(node string) *NodeTally {
		for i := range out {
			if out[i].Node == node {
				return &out[i]
			}
		}
		out = append(out, NodeTally{Node: node, N: -1, Sum: -1})
		return &out[len(out)-1]
	}
	for f, v := range fields {
		if !isNodeField(f) {
			continue
		}
		rest := f[len(FieldNodePrefix):]
		var node, suffix string
		if len(rest) > 2 {
			node, suffix = rest[:len(rest)-2], rest[len(rest)-2:]
		}
		if CheckNodeName(node) != nil || (suffix != nodeCountSuffix && suffix != nodeSumSuffix) {
			return nil, fmt.Errorf("decoding node tallies: unknown field %q", f)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("decoding node tallies: field %q = %q is not an integer ≥ 0", f, v)
		}
		t := at(node)
		if suffix == nodeCountSuffix {
			t.N = n
		} else {
			t.Sum = float64(n)
		}
	}
	for _, t := range out {
		if t.N < 0 || t.Sum < 0 {
			return nil, fmt.Errorf("decoding node tallies: node %q has a count or a sum but not both", t.Node)
		}
	}
	slices.SortFunc(out, func(a, b NodeTally) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}
