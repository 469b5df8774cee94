package cgroup

import (
	"errors"
	"path"
)

// MemoryState is a cgroup's lifetime memory peak and its memory limit: what an OOM report
// carries, read right after the kill while the files still hold them.
type MemoryState struct {
	// HasPeak: PeakBytes is memory.peak (v1: memory.max_usage_in_bytes), the cgroup's
	// lifetime peak (per-descriptor resets made by the sampler do not affect this read).
	HasPeak   bool
	PeakBytes uint64
	// HasLimit: LimitBytes is memory.max (v1: memory.limit_in_bytes), Unlimited when none.
	HasLimit   bool
	LimitBytes uint64
}

// ReadMemoryState reads loc's lifetime peak and limit through the root. What could not be
// read is absent and its error joined into the returned error.
func (r *Reader) ReadMemoryState(loc Location) (MemoryState, error) {
	var st MemoryState
	peakFile, limitFile, parseLimit := "memory.peak", "memory.max", ParseMemoryMax
	if r.version == V1 {
		peakFile, limitFile, parseLimit = "memory.max_usage_in_bytes", "memory.limit_in_bytes", ParseV1Limit
	}
	var errs []error
	if v, err := readParsed(r, loc.MemoryDir, peakFile, ParseSingleValue); err != nil {
		errs = append(errs, err)
	} else {
		st.PeakBytes, st.HasPeak = v, true
	}
	if v, err := readParsed(r, loc.MemoryDir, limitFile, parseLimit); err != nil {
		errs = append(errs, err)
	} else {
		st.LimitBytes, st.HasLimit = v, true
	}
	return st, errors.Join(errs...)
}

// localEventsFile holds a cgroup's own memory event counters (cgroup v2): "oom" counts
// where a limit was hit, "oom_kill" where the victim lived (see pkg/nodeagent/oom).
const localEventsFile = "memory.events.local"

// LocalEventsPath is the host path of dir's memory.events.local (dir relative to the
// root, as Location.MemoryDir), for an inotify watch.
func (r *Reader) LocalEventsPath(dir string) string { return r.Abs(path.Join(dir, localEventsFile)) }

// ReadLocalEvents reads dir's memory.events.local through the root (cgroup v2).
func (r *Reader) ReadLocalEvents(dir string) (MemoryEvents, error) {
	return readParsed(r, dir, localEventsFile, ParseMemoryEvents)
}
