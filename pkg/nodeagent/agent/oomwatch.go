package agent

import (
	"context"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/oom"
)

// oomSource is the OOM source: inotify on every sampled container's memory.events.local
// (cgroup v2), delivering each kill to the agent's OOM path (oom.go) as the kernel counts
// it. Without inotify (cgroup v1, or inotify unavailable) it watches nothing and the
// cgroup cycle finds kills by polling oom_kill at each pod's interval.
type oomSource struct {
	a   *Agent
	w   *oom.Watcher // nil without inotify
	err error        // why inotify is unavailable
}

// OOMSource builds the OOM source. inotify being unavailable is not an error: it is
// logged, and kills are polled instead.
func OOMSource(a *Agent) (Source, error) {
	s := &oomSource{a: a}
	if a.cg.Version() == cgroup.V2 {
		// OnError runs under the watcher's lock; Fail takes only the units' own.
		onErr := func(kind string, err error) { a.units.Fail(sourceOOM, a.now(), kind, err) }
		if s.w, s.err = oom.NewWatcher(a.cg, oom.Options{OnError: onErr}); s.err != nil {
			s.w = nil
			a.log.Error(s.err, "inotify unavailable: oom kills are found by polling at each sampling interval")
		}
	}
	return s, nil
}

func (s *oomSource) Name() string { return sourceOOM }

func (s *oomSource) Detail() string {
	switch {
	case s.err != nil:
		return "inotify unavailable (" + s.err.Error() + "): oom_kill polled at each sampling interval"
	case s.a.cg.Version() == cgroup.V1:
		return "cgroup v1: oom_kill of memory.oom_control polled at each sampling interval"
	default:
		return "inotify on memory.events.local of each container and its pod"
	}
}

// Signals: OOM kills are reported on every node, watched or polled.
func (s *oomSource) Signals() []string { return []string{sourceOOM} }

// Run delivers the inotify watcher's kill events until ctx is done.
func (s *oomSource) Run(ctx context.Context) error {
	if s.w == nil {
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range s.w.Events() {
			s.a.onOOM(ctx, e)
		}
	}()
	err := s.w.Run(ctx)
	<-done
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *oomSource) Close() error {
	if s.w == nil {
		return nil
	}
	return s.w.Close()
}

// watch starts watching a container's memory.events.local. A container that cannot be
// watched falls back to polling oom_kill at its sampling interval. A nil source (no
// inotify) watches nothing.
func (s *oomSource) watch(w watchReq) {
	if s == nil {
		return
	}
	a := s.a
	err := s.w.Add(w.key, w.dir)
	if err != nil {
		a.units.Fail(sourceOOM, a.now(), "watch", err)
	}
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	cs := a.st.ctrs[w.key]
	if cs == nil {
		if err == nil {
			s.w.Remove(w.key) // the container left meanwhile
		}
		return
	}
	cs.oomWatched, cs.oomDir = err == nil, w.dir
	if err != nil {
		cs.errorLocked(sourceOOM, "inotify watch failed, polling oom_kill instead: "+err.Error(), a.now())
	}
}

// forget stops watching containers that are gone.
func (s *oomSource) forget(keys []string) {
	if s == nil {
		return
	}
	for _, k := range keys {
		s.w.Remove(k)
	}
}
