//go:build linux

package ebpf

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// kernelBTF is where CO-RE finds the running kernel's types.
const kernelBTF = "/sys/kernel/btf/vmlinux"

// candidate is one way to serve a signal.
type candidate struct {
	signal, prog string
	attach       func(p *cebpf.Program) (link.Link, error)
}

func rawTP(p *cebpf.Program) (link.Link, error) {
	return link.AttachTracing(link.TracingOptions{Program: p, AttachType: cebpf.AttachTraceRawTp})
}

func classicTP(group, name string) func(p *cebpf.Program) (link.Link, error) {
	return func(p *cebpf.Program) (link.Link, error) { return link.Tracepoint(group, name, p, nil) }
}

// candidates lists every signal's programs in order of preference: the BTF-enabled
// tracepoint first (typed task access), the classic tracepoint (needs tracefs) second.
var candidates = []candidate{
	{SignalOOM, memsignalProgBtfMarkVictim, rawTP},
	{SignalOOM, memsignalProgTpMarkVictim, classicTP("oom", "mark_victim")},
	{SignalReclaimBegin, memsignalProgBtfReclaimBegin, rawTP},
	{SignalReclaimBegin, memsignalProgTpReclaimBegin, classicTP("vmscan", "mm_vmscan_memcg_reclaim_begin")},
	{SignalReclaimEnd, memsignalProgBtfReclaimEnd, rawTP},
	{SignalReclaimEnd, memsignalProgTpReclaimEnd, classicTP("vmscan", "mm_vmscan_memcg_reclaim_end")},
}

// Probe holds the loaded programs and their maps. Safe for concurrent use.
type Probe struct {
	status Status
	maps   memsignalMaps
	links  []link.Link
	progs  []*cebpf.Program
	names  []string // the hooks of progs
	rd     *ringbuf.Reader
	events chan OOMKill
	// bootOffset converts bpf_ktime_get_ns (CLOCK_MONOTONIC) to wall time.
	bootOffset time.Duration
	closeOnce  sync.Once
}

// Open loads and attaches what this kernel and these privileges allow. It never fails:
// a Probe that loaded nothing says why in Status().Reason, and its Events never sends.
func Open() *Probe { return OpenWith(Options{}) }

// OpenWith is Open with options.
func OpenWith(o Options) *Probe {
	p := &Probe{events: make(chan OOMKill, 256)}
	if _, err := os.Stat(kernelBTF); err != nil {
		p.status.Reason = fmt.Sprintf("no kernel BTF (%v): CO-RE programs cannot be relocated", err)
		return p
	}
	// A no-op on ≥ 5.11 (memcg-accounted BPF memory); needs CAP_SYS_RESOURCE before.
	_ = rlimit.RemoveMemlock()
	spec, err := loadMemsignal()
	if err != nil {
		p.status.Reason = err.Error()
		return p
	}
	if err := spec.LoadAndAssign(&p.maps, nil); err != nil {
		p.status.Reason = "creating maps: " + capHint(err)
		return p
	}
	repl := map[string]*cebpf.Map{
		memsignalMapOomEvents: p.maps.OomEvents, memsignalMapOomLost: p.maps.OomLost,
		memsignalMapReclaimStall: p.maps.ReclaimStall, memsignalMapReclaimStart: p.maps.ReclaimStart,
	}
	served := map[string]bool{}
	for _, c := range candidates {
		pr := Program{Signal: c.signal, Name: c.prog, Hook: spec.Programs[c.prog].SectionName}
		if served[c.signal] {
			pr.Err = "not tried: served by a preferred program"
			p.status.Programs = append(p.status.Programs, pr)
			continue
		}
		if o.disabled(c.prog) {
			pr.Err = "disabled"
			p.status.Programs = append(p.status.Programs, pr)
			continue
		}
		prog, l, err := loadOne(spec, c, repl)
		if err != nil {
			pr.Err = capHint(err)
		} else {
			pr.Loaded, served[c.signal] = true, true
			p.progs, p.links, p.names = append(p.progs, prog), append(p.links, l), append(p.names, pr.Hook)
		}
		p.status.Programs = append(p.status.Programs, pr)
	}
	if p.status.OOMAvailable() {
		if p.rd, err = ringbuf.NewReader(p.maps.OomEvents); err != nil {
			p.status.Reason = "ring buffer reader: " + err.Error()
			p.Close()
			return p
		}
	}
	var mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) == nil {
		p.bootOffset = time.Duration(time.Now().UnixNano() - mono.Nano())
	}
	return p
}

// loadOne loads one program against the shared maps and attaches it.
func loadOne(spec *cebpf.CollectionSpec, c candidate, repl map[string]*cebpf.Map) (*cebpf.Program, link.Link, error) {
	one := spec.Copy()
	one.Programs = map[string]*cebpf.ProgramSpec{c.prog: one.Programs[c.prog]}
	for name := range one.Maps {
		if repl[name] == nil {
			delete(one.Maps, name) // globals only there to carry types (bpf2go -type)
		}
	}
	for name := range one.Variables {
		delete(one.Variables, name)
	}
	coll, err := cebpf.NewCollectionWithOptions(one, cebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	prog := coll.DetachProgram(c.prog)
	coll.Close()
	l, err := c.attach(prog)
	if err != nil {
		prog.Close()
		return nil, nil, fmt.Errorf("attach: %w", err)
	}
	return prog, l, nil
}

// capHint says which capability is missing when the kernel said EPERM.
func capHint(err error) string {
	if errors.Is(err, unix.EPERM) {
		return err.Error() + " (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)"
	}
	return err.Error()
}

// Status is what loaded.
func (p *Probe) Status() Status { return p.status }

// Events delivers OOM kills while Run runs; it is closed when Run returns.
func (p *Probe) Events() <-chan OOMKill { return p.events }

// Run reads the ring buffer until ctx is done (or at once, when no OOM program loaded).
func (p *Probe) Run(ctx context.Context) error {
	defer close(p.events)
	if p.rd == nil {
		return nil
	}
	stop := context.AfterFunc(ctx, func() { _ = p.rd.Close() })
	defer stop()
	var rec ringbuf.Record
	for {
		if err := p.rd.ReadInto(&rec); err != nil {
			if errors.Is(err, os.ErrClosed) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading OOM ring buffer: %w", err)
		}
		k, err := p.decode(rec.RawSample)
		if err != nil {
			continue // a record of another layout cannot come from our own program
		}
		select {
		case p.events <- k:
		case <-ctx.Done():
			return nil
		}
	}
}

func (p *Probe) decode(raw []byte) (OOMKill, error) {
	var e memsignalOomEvent
	if err := binary.Read(bytes.NewReader(raw), binary.NativeEndian, &e); err != nil {
		return OOMKill{}, err
	}
	k := OOMKill{At: time.Unix(0, int64(e.TsNs)+int64(p.bootOffset)), PID: e.Pid, TriggerPID: e.TriggerPid,
		Comm: string(bytes.TrimRight(e.Comm[:], "\x00")), CgroupID: e.CgroupId, MemcgID: e.MemcgId,
		LimitMemcgID: e.OomMemcgId, CgroupFromTrigger: e.CgroupFromTrigger != 0}
	unit := uint64(os.Getpagesize())
	if e.RssKb != 0 {
		unit = 1024
	}
	k.AnonBytes, k.FileBytes, k.ShmemBytes = e.AnonPages*unit, e.FilePages*unit, e.ShmemPages*unit
	switch e.Hook {
	case 1:
		k.Hook = "tp_btf/mark_victim"
	case 2:
		k.Hook = "tracepoint/oom/mark_victim"
	}
	return k, nil
}

// Stall reads one memory cgroup's reclaim stall; ok is false when it never stalled (or
// aged out of the LRU map).
func (p *Probe) Stall(cgroupID uint64) (Stall, bool, error) {
	if p.maps.ReclaimStall == nil {
		return Stall{}, false, errors.New("reclaim stall programs not loaded")
	}
	var v memsignalStallVal
	if err := p.maps.ReclaimStall.Lookup(&cgroupID, &v); err != nil {
		if errors.Is(err, cebpf.ErrKeyNotExist) {
			return Stall{}, false, nil
		}
		return Stall{}, false, err
	}
	return Stall{Count: v.Count, TotalNs: v.TotalNs, MaxNs: v.MaxNs, ReclaimedPages: v.Reclaimed}, true, nil
}

// ProgramStats is the kernel's run count and run time of each attached program, by hook.
// The kernel counts only while run-time statistics are enabled (EnableRunStats); this is
// for benchmarks, not the agent.
func (p *Probe) ProgramStats() (map[string]ProgramStat, error) {
	out := map[string]ProgramStat{}
	for i, pr := range p.progs {
		s, err := pr.Stats()
		if err != nil {
			return nil, err
		}
		out[p.names[i]] = ProgramStat{Runs: s.RunCount, Runtime: s.Runtime}
	}
	return out, nil
}

// EnableRunStats turns on the kernel's BPF run-time statistics until the closer is closed.
func EnableRunStats() (io.Closer, error) { return cebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)) }

// Lost counts OOM records dropped because the ring buffer was full.
func (p *Probe) Lost() uint64 {
	if p.maps.OomLost == nil {
		return 0
	}
	var k uint32
	var v uint64
	_ = p.maps.OomLost.Lookup(&k, &v)
	return v
}

// Close detaches every program and frees the maps.
func (p *Probe) Close() error {
	p.closeOnce.Do(func() {
		for _, l := range p.links {
			_ = l.Close()
		}
		for _, pr := range p.progs {
			_ = pr.Close()
		}
		if p.rd != nil {
			_ = p.rd.Close()
		}
		_ = p.maps.Close()
	})
	return nil
}
