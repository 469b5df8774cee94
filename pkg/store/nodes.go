package store

import (
	"slices"
	"strings"
	"unique"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Node attribution in the reader's cache. Rollups carry no node tallies (a rollup is a
// packed histogram), so the reader keeps, per series, a small summary of the windows it
// decoded: node → samples, sum. A closed window is added once, when it is first read
// after it closed; an open window, read again every cycle, counts only for the Read that
// read it. The summary starts over at each load of the profile (at least daily, when the
// oldest day leaves the retention window), so it covers the windows written since then,
// not the whole retention window. At most maxNodesPerSeries nodes are kept per series; a
// further node is not attributed.

// maxNodesPerSeries bounds a series' summary (24 bytes a node).
const maxNodesPerSeries = 64

// nodeAttribution is a profile's summary: closed windows since the last load, and the
// open windows of the last Read, each indexed like the profile's series table.
type nodeAttribution struct {
	closed, open [][]nodeSum
}

// nodeSum is one node's share of a series: the name interned (8 bytes, shared by every
// series the node writes), its samples and their sum.
type nodeSum struct {
	node unique.Handle[string]
	n    int64
	sum  float64
}

// addNodeSums adds ts to (*into)[sid], growing the per-series table as needed.
func addNodeSums(into *[][]nodeSum, sid int32, ts []series.NodeTally) {
	if len(ts) == 0 {
		return
	}
	if n := int(sid) + 1; len(*into) < n {
		*into = append(*into, make([][]nodeSum, n-len(*into))...)
	}
	s := (*into)[sid]
next:
	for _, t := range ts {
		h := unique.Make(t.Node)
		for i := range s {
			if s[i].node == h {
				s[i].n += t.N
				s[i].sum += t.Sum
				continue next
			}
		}
		if len(s) < maxNodesPerSeries {
			s = append(s, nodeSum{node: h, n: t.N, sum: t.Sum})
		}
	}
	(*into)[sid] = s
}

// noteNodes records the node tallies of a window the reader just decoded: in the
// profile's summary when the window is closed and seen closed for the first time, in the
// current Read's when it is open. A window read again after a skipped fold was counted
// when it was first read closed. Malformed tallies are ignored: the histogram is what the
// profile's statistics need.
func (pc *profileCache) noteNodes(sid int32, fields map[string]string, closed, reread bool) {
	if reread {
		return
	}
	ts, err := series.DecodeNodes(fields)
	if err != nil || len(ts) == 0 {
		return
	}
	if pc.nodes == nil {
		pc.nodes = &nodeAttribution{}
	}
	if closed {
		addNodeSums(&pc.nodes.closed, sid, ts)
	} else {
		addNodeSums(&pc.nodes.open, sid, ts)
	}
}

// Nodes returns, per series of the profile, the node tallies of the windows the last Read
// saw since the profile's last load (see above), sorted by node. Series without
// attributed windows are left out.
func (r *Reader) Nodes(profile string) map[series.SeriesID][]series.NodeTally {
	r.mu.Lock()
	pc := r.profiles[profile]
	r.mu.Unlock()
	if pc == nil {
		return nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.nodes == nil {
		return nil
	}
	var all [][]nodeSum
	for _, part := range [][][]nodeSum{pc.nodes.closed, pc.nodes.open} {
		for sid, s := range part {
			for _, x := range s {
				addNodeSums(&all, int32(sid), []series.NodeTally{{Node: x.node.Value(), N: x.n, Sum: x.sum}})
			}
		}
	}
	out := map[series.SeriesID][]series.NodeTally{}
	for sid, s := range all {
		if len(s) == 0 || sid >= len(pc.ids) {
			continue
		}
		ts := make([]series.NodeTally, 0, len(s))
		for _, x := range s {
			ts = append(ts, series.NodeTally{Node: x.node.Value(), N: x.n, Sum: x.sum})
		}
		sortTallies(ts)
		out[pc.ids.id(profile, int32(sid))] = ts
	}
	return out
}

func sortTallies(ts []series.NodeTally) {
	slices.SortFunc(ts, func(a, b series.NodeTally) int { return strings.Compare(a.Node, b.Node) })
}
