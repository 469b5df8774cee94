package cgroup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
)

// SourceName is the cgroup source's name in the agent's metrics and debug view.
const SourceName = "cgroup"

// Error kinds of the cgroup source (the kind label of ballast_node_source_errors_total).
const (
	ErrorKindLocate       = "locate"        // no cgroup directory for the container
	ErrorKindRead         = "read"          // a file could not be read or parsed
	ErrorKindCounterReset = "counter_reset" // cpu usage went backwards: no rate this time
	ErrorKindCPURate      = "cpu_rate"      // no usable rate for another reason
	ErrorKindPeak         = "peak"          // memory.peak could not be opened or read
)

// Target is one container to sample.
type Target struct {
	// Key is the caller's stable name for the container (for example pod UID + container
	// name); state such as the previous cpu reading is kept per key.
	Key         string
	PodUID      string
	QOS         QOSClass
	ContainerID string // as in pod status: "containerd://<id>"
}

// Reading is what one Collect learned about one target.
type Reading struct {
	Key      string
	Location Location
	// Sample is the raw file reading (working set, limit, oom_kill count, PSI, …).
	Sample Sample
	// HasMilliCPU: MilliCPU is the usage rate since the previous Collect of this target. It
	// is absent on the first Collect and after a counter reset.
	HasMilliCPU bool
	MilliCPU    int64
	// HasPeak: Peak is the memory peak since the previous Collect of this target (absent on
	// the first Collect, which only opens the peak file).
	HasPeak bool
	Peak    PeakReading
}

// Collector samples a changing set of containers, keeping per container what interval
// signals need (the previous cpu counter and an open PeakTracker) and its cgroup
// directories open, so a cycle reads each file by its name instead of resolving its whole
// path again. It is a source.Source. Safe for concurrent use, though one Collect at a time
// is the intended use.
type Collector struct {
	r   *Reader
	mu  sync.Mutex
	st  map[string]*targetState
	gen uint64 // counts Collects, to find the targets a Collect no longer lists
	buf []byte // file contents, reused by every read
}

type targetState struct {
	target  Target
	loc     Location
	gen     uint64 // the last Collect that listed the target
	dirs    *openDirs
	prevCPU CPUCounter
	hasPrev bool
	peak    *PeakTracker
}

// NewCollector returns a Collector reading through r.
func NewCollector(r *Reader) *Collector {
	return &Collector{r: r, st: make(map[string]*targetState)}
}

// Name is SourceName.
func (c *Collector) Name() string { return SourceName }

// Collect reads every target at time now and returns one Reading per target whose cgroup
// was found. Targets absent from the list are forgotten (their peak files and directories
// closed); a target whose container ID changed starts over. Each part of a target that
// failed is one source.Error keyed by Target.Key (a target may have several, and still a
// Reading with whatever was read). The error is the context's, when it ended the cycle.
func (c *Collector) Collect(ctx context.Context, now time.Time, targets []Target) ([]Reading, []source.Error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	c.gen++
	for _, t := range targets {
		if s := c.st[t.Key]; s != nil {
			s.gen = c.gen
		}
	}
	for key, s := range c.st {
		if s.gen != c.gen {
			s.close()
			delete(c.st, key)
		}
	}

	readings := make([]Reading, 0, len(targets))
	var errs []source.Error
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return readings, errs, fmt.Errorf("collecting cgroups: %w", err)
		}
		var rd Reading
		var ok bool
		rd, ok, errs = c.collectOne(t, now, errs)
		if ok {
			readings = append(readings, rd)
		}
	}
	return readings, errs, nil
}

// collectOne reads one target, appending its errors to errs.
func (c *Collector) collectOne(t Target, now time.Time, errs []source.Error) (Reading, bool, []source.Error) {
	fail := func(kind string, err error) {
		errs = append(errs, source.Error{Key: t.Key, Kind: kind, Err: err})
	}
	s := c.st[t.Key]
	if s != nil && s.target != t {
		s.close()
		s = nil
	}
	if s == nil {
		loc, err := c.r.LocateContainer(t.PodUID, t.QOS, t.ContainerID)
		if err != nil {
			delete(c.st, t.Key)
			fail(ErrorKindLocate, err)
			return Reading{}, false, errs
		}
		s = &targetState{target: t, loc: loc, gen: c.gen}
		c.st[t.Key] = s
	}

	if s.dirs == nil {
		// Directories that cannot be opened are read by path this time, opened again next.
		s.dirs, _ = c.r.openDirs(s.loc, &c.buf)
	}
	var src fileSource = c.r
	if s.dirs != nil {
		src = s.dirs
	}
	sample, readErr := c.r.readSample(src, s.loc, now)
	if s.dirs != nil && s.dirs.stale {
		s.closeDirs()
	}
	if readErr != nil {
		fail(ErrorKindRead, readErr)
	}
	if !sample.HasCPU && !sample.HasMemory {
		// The cgroup is most likely gone; locate it afresh next time.
		s.close()
		delete(c.st, t.Key)
		return Reading{}, false, errs
	}
	rd := Reading{Key: t.Key, Location: s.loc, Sample: sample}

	if sample.HasCPU {
		if s.hasPrev {
			m, err := MilliCPU(s.prevCPU, sample.CPU)
			if err == nil {
				rd.MilliCPU, rd.HasMilliCPU = m, true
			} else if errors.Is(err, ErrCounterReset) {
				fail(ErrorKindCounterReset, fmt.Errorf("cpu rate: %w", err))
			} else {
				fail(ErrorKindCPURate, fmt.Errorf("cpu rate: %w", err))
			}
		}
		s.prevCPU, s.hasPrev = sample.CPU, true
	}

	if s.peak == nil {
		p, err := c.r.OpenPeak(s.loc)
		if err != nil {
			fail(ErrorKindPeak, err)
		} else {
			s.peak = p
			if sample.HasMemory {
				p.Observe(sample.MemoryUsageBytes)
			}
		}
	} else {
		if sample.HasMemory {
			s.peak.Observe(sample.MemoryUsageBytes)
		}
		pr, err := s.peak.Take()
		switch {
		case err == nil:
			rd.Peak, rd.HasPeak = pr, true
		case errors.Is(err, ErrNoPeak):
		default:
			fail(ErrorKindPeak, err)
		}
	}
	return rd, true, errs
}

// Close closes every open peak file and directory.
func (c *Collector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, s := range c.st {
		s.close()
		delete(c.st, key)
	}
	return nil
}

func (s *targetState) close() {
	if s.peak != nil {
		s.peak.Close()
		s.peak = nil
	}
	s.closeDirs()
}

func (s *targetState) closeDirs() {
	if s.dirs != nil {
		s.dirs.Close()
		s.dirs = nil
	}
}

var _ source.Source[[]Target, []Reading] = (*Collector)(nil)
