package backfill

import (
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

// accumulator folds range answers into per-window histograms of the profile's series, as
// the node agents fold their samples (one sample per container, resource and step).
type accumulator struct {
	window      time.Duration
	hists       map[key]*series.Histogram
	order       []key
	samples     int64
	first, last int64 // unix ms of the oldest and newest sample written
}

type key struct {
	container, resource string
	start               time.Time
}

func newAccumulator(window time.Duration) *accumulator {
	return &accumulator{window: window, hists: map[key]*series.Histogram{}}
}

// add files every point of got whose time lies in [lo, hi), or [lo, hi] for the last chunk
// (query_range includes both ends, so a point on a chunk edge belongs to the later chunk),
// value × scale rounded to a whole unit.
func (a *accumulator) add(resource string, scale float64, got []Series, lo, hi time.Time, last bool) {
	for _, s := range got {
		container := s.Labels["container"]
		if container == "" || !validContainer(container) {
			continue
		}
		for _, p := range s.Points {
			at := time.UnixMilli(p.UnixMilli).UTC()
			if at.Before(lo) || at.After(hi) || at.Equal(hi) && !last {
				continue
			}
			k := key{container, resource, series.WindowStart(at, a.window)}
			h := a.hists[k]
			if h == nil {
				h = &series.Histogram{}
				a.hists[k] = h
				a.order = append(a.order, k)
			}
			if h.Add(float64(int64(p.Value*scale+0.5)), at) != nil {
				continue
			}
			a.samples++
			if a.first == 0 || p.UnixMilli < a.first {
				a.first = p.UnixMilli
			}
			a.last = max(a.last, p.UnixMilli)
		}
	}
}

func (a *accumulator) span() time.Duration {
	return time.Duration(a.last-a.first) * time.Millisecond
}

func (a *accumulator) updates(profile string) []series.WindowUpdate {
	out := make([]series.WindowUpdate, 0, len(a.order))
	for _, k := range a.order {
		out = append(out, series.WindowUpdate{Start: k.start, Hist: a.hists[k],
			Series: series.SeriesID{Profile: profile, Container: k.container, Resource: k.resource, Signal: series.SignalUsage}})
	}
	return out
}

// validContainer keeps the series IDs the store accepts.
func validContainer(name string) bool {
	return (series.SeriesID{Profile: "0123456789abcdef", Container: name, Resource: series.ResourceCPU, Signal: series.SignalUsage}).Validate() == nil
}
