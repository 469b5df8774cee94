package oom

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
)

// deadline bounds every wait; it is a failure bound, not a timing assertion.
const deadline = 30 * time.Second

const eventsFile = "memory.events.local"

// files opens the cgroup reader the watcher reads through, rooted at the parent of pod.
func files(t *testing.T, pod string) *cgroup.Reader {
	t.Helper()
	r, err := cgroup.Open(filepath.Dir(pod), cgroup.Options{Version: cgroup.V2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// podTree makes <tmp>/pod/{memory.events.local, <ctr>/memory.events.local...} from
// testdata/idle, returning the pod directory (the watcher names it "pod", relative to
// <tmp>).
func podTree(t *testing.T, containers ...string) string {
	t.Helper()
	idle, err := os.ReadFile("testdata/idle/memory.events.local")
	if err != nil {
		t.Fatal(err)
	}
	pod := filepath.Join(t.TempDir(), "pod")
	for _, d := range append([]string{pod}, containers...) {
		if d != pod {
			d = filepath.Join(pod, d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, eventsFile), idle, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return pod
}

// put overwrites dst (in place: the watch is on the inode) with the testdata file src.
func put(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, eventsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func putString(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, eventsFile), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func startWatcher(t *testing.T, f Files) *Watcher {
	t.Helper()
	w, err := NewWatcher(f, Options{OnError: func(kind string, err error) { t.Logf("watcher error (%s): %v", kind, err) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
		w.Close()
	})
	return w
}

// next waits for the next event, failing after the deadline.
func next(t *testing.T, w *Watcher) Event {
	t.Helper()
	select {
	case e, ok := <-w.Events():
		if !ok {
			t.Fatal("events channel closed")
		}
		return e
	case <-time.After(deadline):
		t.Fatal("no OOM event before the deadline")
	}
	return Event{}
}

func TestWatcherAttributesKills(t *testing.T) {
	pod := podTree(t, "app", "sidecar")
	app, sidecar := filepath.Join(pod, "app"), filepath.Join(pod, "sidecar")
	w := startWatcher(t, files(t, pod))
	for key, dir := range map[string]string{"app": "pod/app", "sidecar": "pod/sidecar"} {
		if err := w.Add(key, dir); err != nil {
			t.Fatal(err)
		}
	}

	// scenario3: the pod's limit is hit (pod oom 1), the kill is charged to app.
	put(t, "testdata/scenario3/pod/memory.events.local", pod)
	put(t, "testdata/scenario3/pod/container/memory.events.local", app)
	e := next(t, w)
	if e.Key != "app" || e.Dir != "pod/app" || e.Kind != KindPod || e.Count != 1 || e.Time.IsZero() {
		t.Errorf("pod-limit kill: %+v", e)
	}

	// scenario1 in the sidecar: its own limit, oom.group counts the kill twice.
	put(t, "testdata/scenario1/pod/container/memory.events.local", sidecar)
	e = next(t, w)
	if e.Key != "sidecar" || e.Kind != KindContainer || e.Count != 2 {
		t.Errorf("container-limit kill: %+v", e)
	}

	// A kill in app with no oom anywhere: node level.
	putString(t, app, "low 0\nhigh 0\nmax 37\noom 0\noom_kill 2\noom_group_kill 0\n")
	e = next(t, w)
	if e.Key != "app" || e.Kind != KindNode || e.Count != 1 {
		t.Errorf("node-level kill: %+v", e)
	}

	// After Remove, app's kills are not reported: the sidecar's later kill is the next event.
	w.Remove("app")
	putString(t, app, "low 0\nhigh 0\nmax 37\noom 0\noom_kill 9\noom_group_kill 0\n")
	putString(t, sidecar, "low 0\nhigh 0\nmax 40\noom 2\noom_kill 3\noom_group_kill 1\n")
	e = next(t, w)
	if e.Key != "sidecar" || e.Kind != KindContainer || e.Count != 1 {
		t.Errorf("after Remove(app): %+v", e)
	}
}

// TestWatcherBaseline: kills that happened before Add are not reported.
func TestWatcherBaseline(t *testing.T) {
	pod := podTree(t, "app")
	app := filepath.Join(pod, "app")
	put(t, "testdata/scenario1/pod/container/memory.events.local", app)
	w := startWatcher(t, files(t, pod))
	if err := w.Add("app", "pod/app"); err != nil {
		t.Fatal(err)
	}
	putString(t, app, "low 0\nhigh 0\nmax 40\noom 2\noom_kill 3\noom_group_kill 1\n")
	if e := next(t, w); e.Count != 1 || e.Kind != KindContainer {
		t.Errorf("got %+v, want one new container-limit kill", e)
	}
}

func TestWatcherAddErrors(t *testing.T) {
	pod := podTree(t, "app")
	w, err := NewWatcher(files(t, pod), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add("x", "pod/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
	// A directory outside the cgroup root is refused, even though the file exists there.
	outside := filepath.Join(filepath.Dir(filepath.Dir(pod)), "outside")
	if err := os.MkdirAll(filepath.Join(outside, "ctr"), 0o755); err != nil {
		t.Fatal(err)
	}
	putString(t, outside, "oom 0\noom_kill 0\n")
	putString(t, filepath.Join(outside, "ctr"), "oom 0\noom_kill 0\n")
	if err := w.Add("escape", "../outside/ctr"); err == nil {
		t.Error("a container directory outside the cgroup root was watched")
	}
	putString(t, filepath.Join(pod, "app"), "garbage\n")
	if err := w.Add("app", "pod/app"); err == nil {
		t.Error("unparsable memory.events.local accepted")
	}
	if len(w.byWD) != 0 || len(w.byPath) != 0 {
		t.Errorf("failed Adds left watches: %d, %d", len(w.byWD), len(w.byPath))
	}
	w.Close()
	if err := w.Add("app", "pod/app"); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
}

// TestWatcherCloseEndsRun: Close unblocks a running Run, which returns nil and closes Events.
func TestWatcherCloseEndsRun(t *testing.T) {
	w, err := NewWatcher(files(t, podTree(t)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	w.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after Close: %v", err)
		}
	case <-time.After(deadline):
		t.Fatal("Run did not return after Close")
	}
	if _, ok := <-w.Events(); ok {
		t.Error("Events not closed")
	}
}
