package store

import (
	"context"
	"time"

	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/series"
)

// ProfileSeries is one profile's history as read from the store, in the shape the
// recommendation inputs take.
type ProfileSeries struct {
	Containers []recommend.ContainerInput
	Pod        map[string]recommend.Distribution
	OOMs       []recommend.OOMEvent
	// Fallback counts the retained container usage samples (cpu, memory, ephemeral-storage)
	// and how many of them came through the fallback source.
	Fallback FallbackShare
}

// FallbackShare is how much of a profile's retained container usage history came through
// the fallback source (metrics.k8s.io) rather than node agents.
type FallbackShare struct {
	// Samples is every retained container usage sample; FallbackSamples the fallback's.
	Samples, FallbackSamples int64
	// Resolution is the coarsest resolution among the fallback samples (0 when none).
	Resolution time.Duration
}

// ProfileReader is the control plane's view of the store: a profile's merged series and
// OOM events, and purge. It connects lazily (a Lazy), so the control plane starts and keeps
// serving while the store is unreachable, and rebuilds its Reader when the retention window
// changes, since the store layout depends on it.
type ProfileReader struct{ lazy *Lazy }

// NewProfileReader returns a reader for the store at url (redis:// or rediss://).
func NewProfileReader(url string) *ProfileReader { return &ProfileReader{lazy: NewLazy(url)} }

// Close releases the connection.
func (s *ProfileReader) Close() { s.lazy.Close() }

func (s *ProfileReader) readerFor(retention time.Duration) (*Reader, error) {
	return s.lazy.Reader(series.DefaultLayout(retention))
}

// Read merges a profile's series and its OOM stream.
func (s *ProfileReader) Read(ctx context.Context, hash string, now time.Time, retention time.Duration) (ProfileSeries, error) {
	r, err := s.readerFor(retention)
	if err != nil {
		return ProfileSeries{}, err
	}
	hs, err := r.Read(ctx, hash, now)
	if err != nil {
		return ProfileSeries{}, err
	}
	byName := map[string]*recommend.ContainerInput{}
	out := ProfileSeries{Pod: map[string]recommend.Distribution{}}
	for id, h := range hs {
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
	ooms, err := r.ReadOOM(ctx, hash, "")
	if err != nil {
		return ProfileSeries{}, err
	}
	cutoff := now.Add(-retention)
	for _, o := range ooms {
		if o.Event.At.Before(cutoff) {
			continue
		}
		out.OOMs = append(out.OOMs, recommend.OOMEvent{Container: o.Event.Container, Time: o.Event.At,
			PeakBytes: o.Event.PeakBytes, LimitBytes: o.Event.LimitBytes})
	}
	return out, nil
}

// Commands is the number of store commands sent by reads so far (for benchmarks and metrics).
func (s *ProfileReader) Commands() int64 {
	if r := s.lazy.lastReader(); r != nil {
		return r.Stats().Commands
	}
	return 0
}

// Purge deletes every key of a profile hash.
func (s *ProfileReader) Purge(ctx context.Context, hash string) error {
	c, err := s.lazy.connected()
	if err != nil {
		return err
	}
	if _, err := c.Purge(ctx, hash); err != nil {
		return err
	}
	if r := s.lazy.lastReader(); r != nil {
		r.Forget(hash)
	}
	return nil
}
