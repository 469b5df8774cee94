package oom

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
)

// Options tune a Watcher; the zero value is usable.
type Options struct {
	// Buffer is the capacity of the Events channel (default 256).
	Buffer int
	// PendingTTL is how long an "oom" increase may wait for its kill (default
	// DefaultPendingTTL).
	PendingTTL time.Duration
	// Now stamps events (default time.Now).
	Now func() time.Time
	// Metrics may be nil.
	Metrics *Metrics
}

func (o Options) withDefaults() Options {
	if o.Buffer <= 0 {
		o.Buffer = 256
	}
	if o.PendingTTL <= 0 {
		o.PendingTTL = DefaultPendingTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// eventsFile is the file watched in every cgroup directory.
const eventsFile = "memory.events.local"

// containerFiles returns the watched files of a container directory and of its pod (the
// parent directory: kubelet always nests container cgroups directly in the pod cgroup).
func containerFiles(dir string) (dirClean, podDir, ctrFile, podFile string) {
	dirClean = filepath.Clean(dir)
	podDir = filepath.Dir(dirClean)
	return dirClean, podDir, filepath.Join(dirClean, eventsFile), filepath.Join(podDir, eventsFile)
}

// readEvents reads and parses one memory.events.local.
func readEvents(path string) (cgroup.MemoryEvents, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return cgroup.MemoryEvents{}, fmt.Errorf("reading %s: %w", path, err)
	}
	ev, err := cgroup.ParseMemoryEvents(b)
	if err != nil {
		return cgroup.MemoryEvents{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return ev, nil
}
