package store

import (
	"context"
	"sync/atomic"
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
	// Nodes attributes the container usage series to the nodes that wrote them
	// (container → resource → one share per node; Reader.Nodes says which windows count).
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

// ProfileReader is the control plane's view of the store: a profile's merged series and
// OOM events, and purge. It connects lazily (a Lazy), so the control plane starts and keeps
// serving while the store is unreachable, and rebuilds its Reader when the retention window
// changes, since the store layout depends on it.
type ProfileReader struct {
	lazy *Lazy
	// epochWritten: the store epoch was written (or found) once by this process, so a
	// store that is wiped later is told apart from one that never had an epoch.
	epochWritten atomic.Bool
}

// NewProfileReader returns a reader for the store at url (redis:// or rediss://).
func NewProfileReader(url string) *ProfileReader { return NewProfileReaderConfig(Config{URL: url}) }

// NewProfileReaderConfig returns a reader for the store cfg names.
func NewProfileReaderConfig(cfg Config) *ProfileReader {
	return &ProfileReader{lazy: NewLazyConfig(cfg)}
}

// Close releases the connection.
func (s *ProfileReader) Close() { s.lazy.Close() }

func (s *ProfileReader) readerFor(retention time.Duration) (*Reader, error) {
	return s.lazy.Reader(series.DefaultLayout(retention))
}

// Read merges a profile's series and its OOM stream.
func (s *ProfileReader) Read(ctx context.Context, hash string, now time.Time, retention time.Duration) (ProfileSeries, error) {
	ps, err := s.read(ctx, hash, now, retention)
	return ps, s.lazy.Check(err)
}

func (s *ProfileReader) read(ctx context.Context, hash string, now time.Time, retention time.Duration) (ProfileSeries, error) {
	r, err := s.readerFor(retention)
	if err != nil {
		return ProfileSeries{}, err
	}
	if !s.epochWritten.Load() {
		if _, err := s.StoreEpoch(ctx, now); err == nil {
			s.epochWritten.Store(true)
		}
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
	out.Nodes = nodeShares(r.Nodes(hash))
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
		return s.lazy.Check(err)
	}
	if r := s.lazy.lastReader(); r != nil {
		r.Forget(hash)
	}
	return nil
}

// nodeShares keeps the container usage series of a reader's node tallies.
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
