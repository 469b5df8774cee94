package agent

import (
	"context"
	"errors"
	"fmt"
)

// Source is one of the agent's signal sources as the agent runs it (node_exporter's
// collectors): the agent holds its sources as one list, declares each to source.Units in
// list order (the order the debug view lists them), runs every one's Run in a goroutine of
// its own, lists their signals in its heartbeat, and closes them on shutdown. A source owns
// its cadence: a polling source turns the shared loop (loop.go) at the intervals it
// computes, an event-driven one delivers its events until ctx is done. What it reads goes
// into the agent's one state through the shared record path (recordLocked, errorLocked,
// the OOM path onOOM, the pressure path writePressure); the outage buffer and the flush
// are the agent's, never a source's.
type Source interface {
	// Name is the source label of the agent's metrics and of the debug view.
	Name() string
	// Detail is the source's one-line description in the debug view.
	Detail() string
	// Signals are what the source adds to the agent's heartbeat (none when it is off).
	Signals() []string
	// Run reads until ctx is done; it returns nil at once when the source has nothing to
	// run (the kubelet without --kubelet-url, no inotify). An error stops the agent.
	Run(ctx context.Context) error
	// Close releases what the source holds; it is called once Run has returned.
	Close() error
}

// SourceBuilder builds one source for the agent being made by New (its cgroup reader
// open, its units and state ready). It returns a nil Source when the source is off (eBPF
// without --ebpf). cmd/ballast-node lists the builders: adding a source is one file here
// and one entry in that list.
type SourceBuilder func(a *Agent) (Source, error)

// addSources builds the sources in order, declares each to the units and links the two
// the other sources consult: the OOM watcher (the cgroup cycle adds a watch per container
// it locates) and the eBPF probe (containers are joined to it by memory cgroup id, and the
// OOM path deduplicates the kills both report).
func (a *Agent) addSources(builders []SourceBuilder) error {
	for _, b := range builders {
		s, err := b(a)
		if err != nil {
			return err
		}
		if s == nil {
			continue
		}
		a.units.Add(s.Name(), s.Detail())
		a.sources = append(a.sources, s)
		switch s := s.(type) {
		case *oomSource:
			if s.w != nil {
				a.oomw = s
			}
		case *ebpfSource:
			if s.probe != nil {
				a.bpf = s
			}
		}
	}
	return nil
}

// startSources runs every source's Run with start (Run's goroutine starter).
func (a *Agent) startSources(start func(name string, f func(context.Context) error)) {
	for _, s := range a.sources {
		start(s.Name()+" source", s.Run)
	}
}

// closeSources closes every source, in list order, once their Run returned.
func (a *Agent) closeSources() error {
	var errs []error
	for _, s := range a.sources {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the %s source: %w", s.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// signals lists what this agent samples, for its heartbeat: every source's, in list order.
func (a *Agent) signals() []string {
	var out []string
	for _, s := range a.sources {
		out = append(out, s.Signals()...)
	}
	return out
}
