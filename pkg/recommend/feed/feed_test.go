package feed

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/series"
)

// TestOf: a profile's stored series, shaped for recommend — container usage series by
// resource and the memory peak per container (sorted by name), the pod-level usage series,
// the fallback share of the container usage samples only, OOM events as recommend reads
// them, and node shares of container usage series only.
func TestOf(t *testing.T) {
	id := func(ctr, res, sig string) series.SeriesID {
		return series.SeriesID{Profile: "abc", Container: ctr, Resource: res, Signal: sig}
	}
	cpu := &series.Histogram{N: 10, FallbackN: 4, FallbackResolutionSec: 60}
	mem := &series.Histogram{N: 10}
	peak := &series.Histogram{N: 10, FallbackN: 10, FallbackResolutionSec: 600} // not usage: not in the share
	side := &series.Histogram{N: 5, FallbackN: 1, FallbackResolutionSec: 30}
	podDisk := &series.Histogram{N: 3, FallbackN: 3, FallbackResolutionSec: 900} // pod-level: not in the share
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	got := Of(map[series.SeriesID]*series.Histogram{
		id("web", "cpu", series.SignalUsage):            cpu,
		id("web", "memory", series.SignalUsage):         mem,
		id("web", "memory", series.SignalPeak):          peak,
		id("mesh", "cpu", series.SignalUsage):           side,
		id("", "ephemeral-storage", series.SignalUsage): podDisk,
		id("", "memory", series.SignalPeak):             {N: 1}, // no pod-level peak series
	}, []series.OOMEvent{{Container: "web", Pod: "shop/web-1", Node: "n1", At: at, PeakBytes: 100, LimitBytes: 128}},
		map[series.SeriesID][]series.NodeTally{
			id("web", "cpu", series.SignalUsage):            {{Node: "n1", N: 6, Sum: 60}, {Node: "n2", N: 4, Sum: 40}},
			id("web", "memory", series.SignalPeak):          {{Node: "n1", N: 10, Sum: 1}},
			id("", "ephemeral-storage", series.SignalUsage): {{Node: "n1", N: 3, Sum: 3}},
		})
	want := Profile{
		Containers: []recommend.ContainerInput{
			{Name: "mesh", Series: map[string]recommend.Distribution{"cpu": side}},
			{Name: "web", Series: map[string]recommend.Distribution{"cpu": cpu, "memory": mem}, MemoryPeak: peak},
		},
		Pod:      map[string]recommend.Distribution{"ephemeral-storage": podDisk},
		OOMs:     []recommend.OOMEvent{{Container: "web", Time: at, PeakBytes: 100, LimitBytes: 128}},
		Fallback: FallbackShare{Samples: 25, FallbackSamples: 5, Resolution: time.Minute},
		Nodes:    map[string]map[string][]recommend.NodeShare{"web": {"cpu": {{Node: "n1", Samples: 6, Sum: 60}, {Node: "n2", Samples: 4, Sum: 40}}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Of (-want +got)\n%s", d)
	}
}

// TestOfNothingStored: an empty profile has no containers, no node shares and no share.
func TestOfNothingStored(t *testing.T) {
	got := Of(nil, nil, nil)
	if len(got.Containers) != 0 || len(got.Pod) != 0 || got.Nodes != nil || got.Fallback != (FallbackShare{}) || got.OOMs != nil {
		t.Errorf("Of(nothing) = %+v", got)
	}
}
