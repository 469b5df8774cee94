package ebpf

import (
	"context"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
)

// SourceName is the eBPF source's name in the agent's metrics and debug view.
const SourceName = "ebpf"

// ErrorKindStall is the kind of a failed stall lookup.
const ErrorKindStall = "stall"

// StallTarget is one container whose memory cgroup's reclaim stall is read.
type StallTarget struct {
	Key string
	// MemcgID is the container's memory cgroup id (cgroup.Reader.ID of its MemoryDir).
	MemcgID uint64
}

// StallReading is a container's memory pressure from limit reclaim since the previous
// Collect listing it: how long its tasks were stalled reclaiming at the memcg limit.
// It works on cgroup v1 too, where there are no PSI files.
type StallReading struct {
	Key     string
	MemcgID uint64
	// Interval is the time since the previous reading (0 on the first: the totals then
	// cover everything since the programs loaded).
	Interval time.Duration
	// Passes and Stalled are the reclaim passes and their summed duration in Interval;
	// Reclaimed the pages they freed. MaxPass is the longest pass since load.
	Passes, ReclaimedPages uint64
	Stalled, MaxPass       time.Duration
	// Fraction is Stalled / Interval (like PSI "some", summed over the cgroup's tasks, so
	// it can exceed 1 with several stalled threads); 0 on the first reading.
	Fraction float64
	// TotalPasses and TotalStalled are the totals since the programs loaded (or since the
	// LRU map last evicted the cgroup).
	TotalPasses  uint64
	TotalStalled time.Duration
}

// StallReader is what a StallSource reads: a Probe.
type StallReader interface {
	Stall(memcgID uint64) (Stall, bool, error)
}

// StallSource is the reclaim-stall signal as a source.Source: each Collect looks up the
// listed containers' cgroups in the programs' map and returns the change since the
// previous Collect. Safe for one Collect at a time.
type StallSource struct {
	r    StallReader
	prev map[uint64]stallPrev
}

type stallPrev struct {
	s    Stall
	at   time.Time
	seen time.Time
}

// forgetAfter drops the previous reading of a cgroup no Collect listed for this long.
const forgetAfter = time.Hour

// NewStallSource reads stalls through r.
func NewStallSource(r StallReader) *StallSource {
	return &StallSource{r: r, prev: map[uint64]stallPrev{}}
}

// Name is SourceName.
func (s *StallSource) Name() string { return SourceName }

// Collect reads the targets' stalls at now.
func (s *StallSource) Collect(_ context.Context, now time.Time, targets []StallTarget) ([]StallReading, []source.Error, error) {
	out := make([]StallReading, 0, len(targets))
	var errs []source.Error
	for _, t := range targets {
		cur, _, err := s.r.Stall(t.MemcgID)
		if err != nil {
			errs = append(errs, source.Error{Key: t.Key, Kind: ErrorKindStall, Err: err})
			continue
		}
		rd := StallReading{Key: t.Key, MemcgID: t.MemcgID, MaxPass: time.Duration(cur.MaxNs),
			TotalPasses: cur.Count, TotalStalled: time.Duration(cur.TotalNs)}
		p, ok := s.prev[t.MemcgID]
		base := Stall{}
		if ok && cur.Count >= p.s.Count && cur.TotalNs >= p.s.TotalNs {
			base, rd.Interval = p.s, now.Sub(p.at)
		}
		// Otherwise first sight, or the LRU map evicted and restarted the entry: the totals
		// are the reading.
		rd.Passes, rd.ReclaimedPages = cur.Count-base.Count, cur.ReclaimedPages-min(base.ReclaimedPages, cur.ReclaimedPages)
		rd.Stalled = time.Duration(cur.TotalNs - base.TotalNs)
		if rd.Interval > 0 {
			rd.Fraction = float64(rd.Stalled) / float64(rd.Interval)
		}
		s.prev[t.MemcgID] = stallPrev{s: cur, at: now, seen: now}
		out = append(out, rd)
	}
	for id, p := range s.prev {
		if now.Sub(p.seen) > forgetAfter {
			delete(s.prev, id)
		}
	}
	return out, errs, nil
}
