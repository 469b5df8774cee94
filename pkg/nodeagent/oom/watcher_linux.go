package oom

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Watcher reports OOM kills of the containers added to it. Each container's
// memory.events.local and its pod's are watched with inotify (IN_MODIFY, which the kernel
// raises when a counter moves); on each notification the files are read and new kills are
// attributed (see the package doc) and sent on Events. Add and Remove are safe to call
// while Run is running.
type Watcher struct {
	opts   Options
	files  Files
	file   *os.File // the inotify descriptor, non-blocking, in the runtime poller
	fd     int
	events chan Event

	mu     sync.Mutex
	closed bool
	tr     *tracker
	byWD   map[int32]*watch
	byPath map[string]*watch
}

// watch is one inotify watch on one memory.events.local.
type watch struct {
	wd      int32
	dir     string          // the cgroup directory, relative to the root
	keys    map[string]bool // containers whose own file this is
	podRefs int             // containers whose pod file this is
}

// NewWatcher creates an inotify instance watching files reached through files (a
// *cgroup.Reader). Close releases it.
func NewWatcher(files Files, opts Options) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating inotify instance: %w", err)
	}
	opts = opts.withDefaults()
	return &Watcher{
		opts:   opts,
		files:  files,
		file:   os.NewFile(uintptr(fd), "inotify"),
		fd:     fd,
		events: make(chan Event, opts.Buffer),
		tr:     newTracker(opts.PendingTTL),
		byWD:   make(map[int32]*watch),
		byPath: make(map[string]*watch),
	}, nil
}

// Events delivers kills; it is closed when Run returns.
func (w *Watcher) Events() <-chan Event { return w.events }

// Add starts watching the container whose cgroup directory is dir (relative to the cgroup
// root, as cgroup.Location.MemoryDir; and its pod, dir's parent) under key. Current
// counters become the baseline: earlier kills are not reported. Adding an existing key
// replaces it.
func (w *Watcher) Add(key, dir string) error {
	dir, podDir := podDirOf(dir)
	ctrFile, podFile := w.files.LocalEventsPath(dir), w.files.LocalEventsPath(podDir)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("watching %s: %w", ctrFile, os.ErrClosed)
	}
	w.removeLocked(key)
	// Watch first, then read the baselines: a change in between is read as part of the
	// baseline and its notification finds no delta, rather than being missed.
	cw, err := w.watchLocked(dir, ctrFile)
	if err != nil {
		return err
	}
	cw.keys[key] = true
	pw, err := w.watchLocked(podDir, podFile)
	if err != nil {
		delete(cw.keys, key)
		w.unwatchIfUnusedLocked(cw)
		return err
	}
	pw.podRefs++
	ctr, err := w.files.ReadLocalEvents(dir)
	podEv, perr := w.files.ReadLocalEvents(podDir)
	if err == nil {
		err = perr
	}
	if err != nil {
		delete(cw.keys, key)
		pw.podRefs--
		w.unwatchIfUnusedLocked(cw)
		w.unwatchIfUnusedLocked(pw)
		return fmt.Errorf("watching container %s: %w", key, err)
	}
	w.tr.add(key, dir, podDir, ctr, podEv)
	return nil
}

// Remove stops watching the container added under key. Unknown keys are ignored.
func (w *Watcher) Remove(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removeLocked(key)
}

func (w *Watcher) removeLocked(key string) {
	c, ok := w.tr.containers[key]
	if !ok {
		return
	}
	ctrFile, podFile := w.files.LocalEventsPath(c.dir), w.files.LocalEventsPath(c.podDir)
	w.tr.remove(key)
	if cw := w.byPath[ctrFile]; cw != nil {
		delete(cw.keys, key)
		w.unwatchIfUnusedLocked(cw)
	}
	if pw := w.byPath[podFile]; pw != nil {
		pw.podRefs--
		w.unwatchIfUnusedLocked(pw)
	}
}

func (w *Watcher) watchLocked(dir, path string) (*watch, error) {
	if wt, ok := w.byPath[path]; ok {
		return wt, nil
	}
	wd, err := unix.InotifyAddWatch(w.fd, path, unix.IN_MODIFY)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", path, err)
	}
	if wt, ok := w.byWD[int32(wd)]; ok {
		// The same file under another name (bind mount, symlink): one watch serves both.
		w.byPath[path] = wt
		return wt, nil
	}
	wt := &watch{wd: int32(wd), dir: dir, keys: make(map[string]bool)}
	w.byWD[wt.wd], w.byPath[path] = wt, wt
	return wt, nil
}

func (w *Watcher) unwatchIfUnusedLocked(wt *watch) {
	if len(wt.keys) > 0 || wt.podRefs > 0 {
		return
	}
	for p, x := range w.byPath {
		if x == wt {
			delete(w.byPath, p)
		}
	}
	if w.byWD[wt.wd] == wt {
		delete(w.byWD, wt.wd)
		// EINVAL means the kernel already dropped the watch (the cgroup was removed).
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wt.wd))
	}
}

// Run reads inotify events until ctx is done (returning ctx.Err()), Close is called
// (returning nil) or the descriptor fails, and closes Events when it returns. Call it once.
func (w *Watcher) Run(ctx context.Context) error {
	defer close(w.events)
	stop := context.AfterFunc(ctx, func() { _ = w.file.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, 64*1024)
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, os.ErrClosed) {
				return nil // Close was called
			}
			return fmt.Errorf("reading inotify events: %w", err)
		}
		raw, err := parseInotify(buf[:n])
		if err != nil {
			w.mu.Lock()
			w.opts.OnError(ErrorKindInotify, err)
			w.mu.Unlock()
		}
		for _, e := range w.handle(raw) {
			select {
			case w.events <- e:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// handle turns one batch of inotify events into kill events.
func (w *Watcher) handle(raw []rawEvent) []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.opts.Now()
	var out []Event
	for _, r := range raw {
		if r.mask&inQOverflow != 0 {
			// Events were lost: re-read every watched container.
			for key := range w.tr.containers {
				out = w.checkContainerLocked(key, now, out)
			}
			continue
		}
		wt := w.byWD[r.wd]
		if wt == nil {
			continue
		}
		if r.mask&inIgnored != 0 {
			// The kernel dropped the watch (the cgroup was removed). The containers stay
			// registered until Removed; there is nothing left to read.
			for p, x := range w.byPath {
				if x == wt {
					delete(w.byPath, p)
				}
			}
			delete(w.byWD, r.wd)
			continue
		}
		if r.mask&inModify == 0 {
			continue
		}
		if wt.podRefs > 0 {
			w.checkPodLocked(wt.dir, now)
		}
		for key := range wt.keys {
			out = w.checkContainerLocked(key, now, out)
		}
	}
	return out
}

func (w *Watcher) checkPodLocked(podDir string, now time.Time) {
	ev, err := w.files.ReadLocalEvents(podDir)
	if err != nil {
		w.opts.OnError(ErrorKindRead, err)
		return
	}
	w.tr.observePod(podDir, ev, now)
}

// checkContainerLocked reads the pod's file, then the container's: the pod's "oom" is
// counted before the kill, but its notification may arrive after the container's.
func (w *Watcher) checkContainerLocked(key string, now time.Time, out []Event) []Event {
	c, ok := w.tr.containers[key]
	if !ok {
		return out
	}
	w.checkPodLocked(c.podDir, now)
	ev, err := w.files.ReadLocalEvents(c.dir)
	if err != nil {
		w.opts.OnError(ErrorKindRead, err)
		return out
	}
	if e, ok := w.tr.observeContainer(key, ev, now); ok {
		out = append(out, e)
	}
	return out
}

// Close releases the inotify descriptor, which ends Run.
func (w *Watcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.file.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("closing inotify instance: %w", err)
	}
	return nil
}
