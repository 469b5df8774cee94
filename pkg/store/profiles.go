package store

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

// ProfileSeries is one profile's history as stored: its merged histograms by series, its
// OOM events within the retention window and the per-node tallies of its series
// (Reader.Nodes says which windows count). Shaping it into the recommendation inputs is
// pkg/recommend/feed's job, not the store's.
type ProfileSeries struct {
	Series map[series.SeriesID]*series.Histogram
	OOMs   []series.OOMEvent
	Nodes  map[series.SeriesID][]series.NodeTally
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
	out := ProfileSeries{Series: hs, Nodes: r.Nodes(hash)}
	ooms, err := r.ReadOOM(ctx, hash, "")
	if err != nil {
		return ProfileSeries{}, err
	}
	cutoff := now.Add(-retention)
	for _, o := range ooms {
		if !o.Event.At.Before(cutoff) {
			out.OOMs = append(out.OOMs, o.Event)
		}
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
