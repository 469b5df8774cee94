package oom

import (
	"path"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
)

// Files is how the watcher reaches memory.events.local: through the cgroup package's
// rooted reader (*cgroup.Reader), with directories relative to its root.
type Files interface {
	// LocalEventsPath is the host path of dir's memory.events.local, for inotify.
	LocalEventsPath(dir string) string
	// ReadLocalEvents reads and parses dir's memory.events.local.
	ReadLocalEvents(dir string) (cgroup.MemoryEvents, error)
}

// Error kinds reported to Options.OnError.
const (
	ErrorKindRead    = "read"    // a memory.events.local could not be read or parsed
	ErrorKindInotify = "inotify" // the inotify descriptor returned a malformed event
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
	// OnError, if set, is told about every failure inside Run (kind: ErrorKindRead,
	// ErrorKindInotify). It is called with the watcher's lock held: it must not call back.
	OnError func(kind string, err error)
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
	if o.OnError == nil {
		o.OnError = func(string, error) {}
	}
	return o
}

// podDirOf is a container directory's pod directory: the kubelet always nests container
// cgroups directly in the pod cgroup. Directories are slash-separated, relative to the
// cgroup root.
func podDirOf(dir string) (dirClean, podDir string) {
	dirClean = path.Clean(dir)
	return dirClean, path.Dir(dirClean)
}
