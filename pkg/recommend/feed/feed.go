// Package feed shapes one profile's history, as pkg/store returns it (merged histograms by
// series, OOM events, per-node tallies), into the inputs of the recommendation math
// (recommend.Input). It is pure: the store only returns data, the profiles controller calls
// Of and hands the result to recommend.Compute.
package feed

import (
	"slices"
	"strings"
	"time"

	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/series"
)

// Profile is one profile's history in the shape the recommendation inputs take.
type Profile struct {
	// Containers has one entry per container with a series, sorted by name.
	Containers []recommend.ContainerInput
	// Pod is the pod-level usage series by resource (emptyDir ephemeral storage).
	Pod  map[string]recommend.Distribution
	OOMs []recommend.OOMEvent
	// Fallback counts the retained container usage samples (cpu, memory, ephemeral-storage)
	// and how many of them came through the fallback source.
	Fallback FallbackShare
	// Nodes attributes the container usage series to the nodes that wrote them
	// (container → resource → one share per node).
	Nodes map[string]map[string][]recommend.NodeShare
}

// FallbackShare is how much of a profile's retained container usage history came through
// the fallback source (metrics.k8s.io) rather than node agents.
type FallbackShare struct {
	// Samples is every retained container usage sample; FallbackSamples the fallback's.
	Samples, FallbackSamples int64
	// Resolution is the coarsest resolution among the fallback samples (0 when none).
	Resolution time.Duration
}

// Of shapes a profile's merged histograms (by series), its OOM events and the per-node
// tallies of its series into recommendation inputs: container usage series by resource,
// the memory peak series, the pod-level usage series, the fallback share of the container
// usage samples and the container usage series' node shares.
func Of(hists map[series.SeriesID]*series.Histogram, ooms []series.OOMEvent,
	tallies map[series.SeriesID][]series.NodeTally) Profile {
	byName := map[string]*recommend.ContainerInput{}
	out := Profile{Pod: map[string]recommend.Distribution{}}
	for id, h := range hists {
		if id.Container == "" {
			if id.Signal == series.SignalUsage {
				out.Pod[id.Resource] = h
			}
			continue
		}
		ci := byName[id.Container]
		if ci == nil {
			ci = &recommend.ContainerInput{Name: id.Container, Series: map[string]recommend.Distribution{}}
			byName[id.Container] = ci
		}
		switch {
		case id.Signal == series.SignalPeak && id.Resource == series.ResourceMemory:
			ci.MemoryPeak = h
		case id.Signal == series.SignalUsage:
			ci.Series[id.Resource] = h
			out.Fallback.Samples += h.N
			out.Fallback.FallbackSamples += h.FallbackN
			out.Fallback.Resolution = max(out.Fallback.Resolution, time.Duration(h.FallbackResolutionSec)*time.Second)
		}
	}
	for _, ci := range byName {
		out.Containers = append(out.Containers, *ci)
	}
	slices.SortFunc(out.Containers, func(a, b recommend.ContainerInput) int { return strings.Compare(a.Name, b.Name) })
	for _, o := range ooms {
		out.OOMs = append(out.OOMs, recommend.OOMEvent{Container: o.Container, Time: o.At, PeakBytes: o.PeakBytes, LimitBytes: o.LimitBytes})
	}
	out.Nodes = nodeShares(tallies)
	return out
}

// nodeShares keeps the container usage series of the node tallies.
func nodeShares(tallies map[series.SeriesID][]series.NodeTally) map[string]map[string][]recommend.NodeShare {
	var out map[string]map[string][]recommend.NodeShare
	for id, ts := range tallies {
		if id.Container == "" || id.Signal != series.SignalUsage {
			continue
		}
		if out == nil {
			out = map[string]map[string][]recommend.NodeShare{}
		}
		byRes := out[id.Container]
		if byRes == nil {
			byRes = map[string][]recommend.NodeShare{}
			out[id.Container] = byRes
		}
		shares := make([]recommend.NodeShare, 0, len(ts))
		for _, t := range ts {
			shares = append(shares, recommend.NodeShare{Node: t.Node, Samples: t.N, Sum: t.Sum})
		}
		byRes[id.Resource] = shares
	}
	return out
}
