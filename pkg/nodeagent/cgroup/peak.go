package cgroup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
)

// PeakMode is how a PeakTracker learns the memory peak of an interval.
type PeakMode int

const (
	// PeakPerFD: cgroup v2 memory.peak opened read-write and reset through its own file
	// descriptor (Linux ≥ 6.12). The kernel keeps a watermark per open file: writing any
	// non-empty string sets it to the current usage, reading it returns the peak since that
	// write. Other readers (a fresh open, the kubelet) still see the lifetime peak. Every
	// interval's peak is exact.
	PeakPerFD PeakMode = iota + 1
	// PeakRunningMax: the file only holds the lifetime peak (memory.peak before 6.12, or
	// v1 memory.max_usage_in_bytes, which Ballast never resets because a v1 reset is global).
	// When the lifetime peak rose during the interval, the new value is exactly the
	// interval's peak; otherwise the interval's peak is the max of Observed usage samples.
	PeakRunningMax
	// PeakSampled: no peak file; the interval's peak is the max of Observed usage samples.
	PeakSampled
)

func (m PeakMode) String() string {
	switch m {
	case PeakPerFD:
		return "per-fd"
	case PeakRunningMax:
		return "running-max"
	case PeakSampled:
		return "sampled"
	}
	return "unknown"
}

// ErrNoPeak is returned by Take when the interval produced nothing to report: the lifetime
// peak did not move and no usage sample was observed.
var ErrNoPeak = errors.New("no memory peak known for the interval")

// PeakReading is the memory peak of one interval. Exact is false when it is the max of
// sampled usage, which can miss a spike between samples (it is then a lower bound).
type PeakReading struct {
	Bytes uint64
	Exact bool
}

// peakFile is the part of *os.File a PeakTracker uses (a fake in tests).
type peakFile interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Close() error
}

// PeakTracker reports the memory peak per interval (between two Take calls) of one cgroup.
// It keeps its file open for its whole life; Close releases it. Safe for concurrent use.
type PeakTracker struct {
	mu         sync.Mutex
	f          peakFile // nil in PeakSampled
	name       string
	mode       PeakMode
	last       uint64 // PeakRunningMax: file value at the previous Take (or open)
	sampled    uint64
	hasSampled bool
	buf        [64]byte // for read, kept here so that a read does not allocate
}

// resetPayload is what is written to memory.peak to reset the descriptor's watermark.
var resetPayload = []byte("reset\n")

// OpenPeak opens loc's peak file and picks the best mode the kernel allows: PeakPerFD if
// memory.peak opens read-write on a cgroup2 file system and the reset write succeeds,
// else PeakRunningMax if it (or v1 memory.max_usage_in_bytes) can be read, else
// PeakSampled when the file does not exist. Only files on cgroup2 are ever written to.
func (r *Reader) OpenPeak(loc Location) (*PeakTracker, error) {
	name := path.Join(loc.MemoryDir, "memory.peak")
	if r.version == V1 {
		name = path.Join(loc.MemoryDir, "memory.max_usage_in_bytes")
	} else if f, err := r.root.OpenFile(name, os.O_RDWR, 0); err == nil {
		if onCgroup2(f) {
			if t, err := newPeakTracker(f, name, true); err == nil {
				return t, nil
			}
		} else {
			f.Close()
		}
	}
	f, err := r.root.Open(name)
	if err != nil {
		if isAbsent(err) {
			return &PeakTracker{name: name, mode: PeakSampled}, nil
		}
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	return newPeakTracker(f, name, false)
}

// newPeakTracker starts a tracker on an open file. With resettable it resets the
// descriptor's watermark and falls back to PeakRunningMax when that write fails; f is
// closed on error.
func newPeakTracker(f peakFile, name string, resettable bool) (*PeakTracker, error) {
	t := &PeakTracker{f: f, name: name, mode: PeakRunningMax}
	if resettable {
		if _, err := f.WriteAt(resetPayload, 0); err == nil {
			t.mode = PeakPerFD
			return t, nil
		}
	}
	v, err := t.read()
	if err != nil {
		f.Close()
		return nil, err
	}
	t.last = v
	return t, nil
}

// Mode is the tracker's current mode (PeakPerFD may degrade to PeakRunningMax if a reset
// write fails).
func (t *PeakTracker) Mode() PeakMode {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mode
}

// Observe records one usage sample (memory.current or memory.usage_in_bytes) taken during
// the current interval; it is the fallback when the file cannot say.
func (t *PeakTracker) Observe(usageBytes uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.hasSampled || usageBytes > t.sampled {
		t.sampled, t.hasSampled = usageBytes, true
	}
}

// Take returns the peak of the interval since the previous Take (or since the tracker was
// opened) and starts the next interval. In PeakPerFD it reads the descriptor, then resets
// it; if the reset fails the tracker continues in PeakRunningMax from the value just read.
// A failed read leaves the interval open, so the next Take covers both.
func (t *PeakTracker) Take() (PeakReading, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out PeakReading
	switch t.mode {
	case PeakPerFD:
		v, err := t.read()
		if err != nil {
			return PeakReading{}, err
		}
		if _, err := t.f.WriteAt(resetPayload, 0); err != nil {
			t.mode, t.last = PeakRunningMax, v
		}
		out = PeakReading{Bytes: max(v, t.sampledOrZero()), Exact: true}
	case PeakRunningMax:
		v, err := t.read()
		if err != nil {
			return PeakReading{}, err
		}
		switch {
		case v > t.last:
			out = PeakReading{Bytes: v, Exact: true}
		case v < t.last:
			// Someone reset the lifetime peak (v1): v is a lower bound, like the samples.
			out = PeakReading{Bytes: max(v, t.sampledOrZero())}
		case t.hasSampled:
			out = PeakReading{Bytes: t.sampled}
		default:
			t.last = v
			return PeakReading{}, fmt.Errorf("%s: %w", t.name, ErrNoPeak)
		}
		t.last = v
	default:
		if !t.hasSampled {
			return PeakReading{}, fmt.Errorf("%s: %w", t.name, ErrNoPeak)
		}
		out = PeakReading{Bytes: t.sampled}
	}
	t.sampled, t.hasSampled = 0, false
	return out, nil
}

func (t *PeakTracker) sampledOrZero() uint64 {
	if t.hasSampled {
		return t.sampled
	}
	return 0
}

// read reads the whole file from offset 0 (a pread restarts a kernfs seq file).
func (t *PeakTracker) read() (uint64, error) {
	buf := t.buf[:]
	n, err := t.f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n > 0) {
		return 0, fmt.Errorf("reading %s: %w", t.name, err)
	}
	v, err := ParseSingleValue(buf[:n])
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", t.name, err)
	}
	return v, nil
}

// Close releases the file descriptor (and with it the kernel's per-fd watermark).
func (t *PeakTracker) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	t.mode = PeakSampled
	return err
}
