package agent

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
	"github.com/ballastk8s/ballast/pkg/nodeagent/oom"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
)

const (
	sourceEBPF = ebpf.SourceName
	// oomDedupWindow is the least time within which a kill seen by eBPF and an oom_kill
	// increase of the cgroup files are taken as the same kill (twice the pod's interval
	// when polled: a poll sees a kill up to one interval late).
	oomDedupWindow = 10 * time.Second
)

// ebpfSource is the optional eBPF memory signal (--ebpf): the OOM program's kills, handed
// to the agent's OOM path, and the reclaim-stall reading the cgroup cycle takes for its
// containers. Nothing loading is not an error: the file sources work without it, and it
// is not retried.
type ebpfSource struct {
	a      *Agent
	probe  *ebpf.Probe       // nil unless something loaded
	stall  *ebpf.StallSource // nil unless both reclaim programs loaded
	status ebpf.Status
	loaded prometheus.Gauge
	// lost reads the programs' ring-buffer drop count (set once the probe loaded).
	lost atomic.Pointer[func() uint64]
}

// EBPFSource builds the eBPF source: its metrics always (0 without --ebpf), the source
// itself only with --ebpf.
func EBPFSource(a *Agent) (Source, error) {
	s := newEBPFSource(a)
	if !a.o.EBPF {
		return nil, nil
	}
	s.open()
	return s, nil
}

// newEBPFSource registers the source's metrics; open loads the programs.
func newEBPFSource(a *Agent) *ebpfSource {
	s := &ebpfSource{a: a}
	s.loaded = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ballast_node_ebpf_programs_loaded",
		Help: "eBPF programs attached (--ebpf): 0 when off, or when the kernel or the capabilities allow none (the agent then runs on cgroup files alone).",
	})
	a.reg.MustRegister(s.loaded)
	// The OOM records the programs could not put into the full ring buffer (the
	// kernel-side count, read at scrape time). Such a kill is still counted from the
	// cgroup files, without its victim details.
	a.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "ballast_node_ebpf_lost_events_total",
		Help: "OOM records dropped by the eBPF programs because the ring buffer was full (the kill is still counted from the cgroup files).",
	}, func() float64 { return float64(s.lostCount()) }))
	return s
}

// lostCount is the probe's drop count, 0 without a probe.
func (s *ebpfSource) lostCount() uint64 {
	if p := s.lost.Load(); p != nil {
		return (*p)()
	}
	return 0
}

// open loads the programs and says in one log line what loaded.
func (s *ebpfSource) open() {
	a := s.a
	p := ebpf.Open()
	st := p.Status()
	s.status = st
	s.loaded.Set(float64(st.Loaded()))
	if st.Loaded() == 0 {
		a.log.Info("eBPF off: running on cgroup files alone", "reason", st.Reason, "programs", programErrors(st))
		_ = p.Close()
		return
	}
	a.log.Info("eBPF loaded", "programs", st.Loaded(), "oom", st.Hook(ebpf.SignalOOM),
		"reclaimBegin", st.Hook(ebpf.SignalReclaimBegin), "reclaimEnd", st.Hook(ebpf.SignalReclaimEnd),
		"failed", programErrors(st))
	s.probe = p
	lost := p.Lost
	s.lost.Store(&lost)
	if st.StallAvailable() {
		s.stall = ebpf.NewStallSource(p)
	}
}

func (s *ebpfSource) Name() string { return sourceEBPF }

func (s *ebpfSource) Detail() string { return s.status.String() }

func (s *ebpfSource) Signals() []string {
	if s.probe == nil {
		return nil
	}
	return []string{sourceEBPF}
}

func (s *ebpfSource) Close() error {
	if s.probe == nil {
		return nil
	}
	return s.probe.Close()
}

// oomAvailable reports whether the OOM program runs (false for a nil source).
func (s *ebpfSource) oomAvailable() bool { return s != nil && s.probe.Status().OOMAvailable() }

// stalls reports whether the reclaim-stall reading is available (false for a nil source).
func (s *ebpfSource) stalls() bool { return s != nil && s.stall != nil }

func programErrors(st ebpf.Status) map[string]string {
	out := map[string]string{}
	for _, pr := range st.Programs {
		if !pr.Loaded && pr.Err != "" {
			out[pr.Hook] = pr.Err
		}
	}
	return out
}

// Run delivers the programs' OOM kills until ctx is done. A ring buffer that fails ends
// only this loop (the files still report kills), never the agent.
func (s *ebpfSource) Run(ctx context.Context) error {
	if s.probe == nil {
		return nil
	}
	a := s.a
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := range s.probe.Events() {
			s.onKill(ctx, k)
		}
	}()
	err := s.probe.Run(ctx)
	<-done
	if err != nil && ctx.Err() == nil {
		a.units.Fail(sourceEBPF, a.now(), "ringbuf", err)
		a.log.Error(err, "eBPF OOM records stopped: kills are counted from the cgroup files alone")
	}
	return nil
}

// onKill joins a kill to the container whose memory cgroup it happened in and hands it
// to the OOM path (which deduplicates it against the cgroup files' count).
func (s *ebpfSource) onKill(ctx context.Context, k ebpf.OOMKill) {
	a := s.a
	a.st.mu.Lock()
	var key string
	kind := oom.KindPod
	for _, cs := range a.st.ctrs {
		if cs.memcgID != 0 && cs.memcgID == k.MemcgID {
			key = cs.key
			switch k.LimitMemcgID {
			case cs.memcgID:
				kind = oom.KindContainer
			case 0:
				kind = oom.KindNode
			}
			break
		}
	}
	a.st.mu.Unlock()
	if key == "" {
		a.log.V(1).Info("oom kill outside the sampled containers", "pid", k.PID, "comm", k.Comm, "memcg", k.MemcgID)
		return
	}
	a.log.Info("oom kill seen by eBPF", "container", key, "pid", k.PID, "comm", k.Comm, "hook", k.Hook,
		"kind", kind, "anonBytes", k.AnonBytes, "fileBytes", k.FileBytes, "latency", a.now().Sub(k.At).String())
	a.handleOOM(ctx, oom.Event{Key: key, Kind: kind, Count: 1, Time: k.At}, true, &k)
}

// oomLedger pairs the kills the two paths saw, so one kill is written once: kills of one
// path not (yet) matched by the other, by time.
type oomLedger struct{ bpf, files []time.Time }

// fresh records n kills at t seen by one path and returns how many the other path has not
// already reported within window.
func (l *oomLedger) fresh(fromBPF bool, n uint64, t time.Time, window time.Duration) uint64 {
	mine, other := &l.files, &l.bpf
	if fromBPF {
		mine, other = &l.bpf, &l.files
	}
	// Forget reports older than the window; later ones stay (paths can arrive out of order).
	prune := func(s []time.Time) []time.Time {
		out := s[:0]
		for _, x := range s {
			if t.Sub(x) <= window {
				out = append(out, x)
			}
		}
		return out
	}
	*mine, *other = prune(*mine), prune(*other)
	var fresh uint64
	for range n {
		if i := slices.IndexFunc(*other, func(x time.Time) bool { return x.Sub(t) <= window }); i >= 0 {
			*other = slices.Delete(*other, i, i+1) // the other path already wrote this kill
			continue
		}
		*mine = append(*mine, t)
		fresh++
	}
	return fresh
}

// collectStall reads the reclaim stall of the cycle's containers (targets by key) and
// returns the pressure readings made from it (containers without PSI).
func (s *ebpfSource) collectStall(ctx context.Context, keys []string, now time.Time) []pressureItem {
	if !s.stalls() {
		return nil
	}
	a := s.a
	targets := make([]ebpf.StallTarget, 0, len(keys))
	a.st.mu.Lock()
	for _, k := range keys {
		if cs := a.st.ctrs[k]; cs != nil && cs.located && cs.memcgID != 0 {
			targets = append(targets, ebpf.StallTarget{Key: k, MemcgID: cs.memcgID})
		}
	}
	a.st.mu.Unlock()
	readings, errs, _ := source.Collect(ctx, a.units, s.stall, now, targets)
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	var press []pressureItem
	for i := range readings {
		if cs := a.st.ctrs[readings[i].Key]; cs != nil {
			rd := readings[i]
			cs.stall, cs.stallAt = &rd, now
			if ps := a.st.pods[cs.podUID]; ps != nil {
				if it := a.stallPressureLocked(&ps.pod, cs, rd, now); it != nil {
					press = append(press, *it)
				}
			}
		}
	}
	for _, e := range errs {
		if cs := a.st.ctrs[e.Key]; cs != nil {
			cs.errorLocked(sourceEBPF, e.Err.Error(), now)
		}
	}
	return press
}
