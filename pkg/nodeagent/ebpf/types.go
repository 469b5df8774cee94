// Package ebpf is ballast-node's optional eBPF memory signal (--ebpf): OOM-kill records
// with victim details from a ring buffer, and per-memcg limit-reclaim stall time from a
// map read each cycle. The programs are bpf/memsignal.c, compiled by bpf2go into the
// committed memsignal_*_bpfel.{go,o}. Each signal's programs are tried in order of
// preference at start and fall back on their own; with no capabilities or no kernel BTF
// nothing loads and the agent runs on cgroup files alone.
package ebpf

import (
	"fmt"
	"strings"
	"time"
)

// Signals, in the order Status lists them.
const (
	SignalOOM          = "oom"
	SignalReclaimBegin = "reclaim_begin"
	SignalReclaimEnd   = "reclaim_end"
)

// Options tune Open; the zero value tries every program.
type Options struct {
	// Disable names programs (Program.Name) not to try, so a test can exercise the
	// fallbacks on a kernel where the preferred programs load.
	Disable []string
}

func (o Options) disabled(name string) bool {
	for _, d := range o.Disable {
		if d == name {
			return true
		}
	}
	return false
}

// Program is one program tried for a signal.
type Program struct {
	Signal string
	// Name is the program's function in bpf/memsignal.c; Hook its attach point
	// ("tp_btf/mark_victim", "tracepoint/oom/mark_victim", …).
	Name, Hook string
	Loaded     bool
	// Err is why it did not load or attach ("" when loaded or not tried).
	Err string
}

// Status is what loaded.
type Status struct {
	// Reason is why nothing could load at all ("" when the maps were created).
	Reason   string
	Programs []Program
}

// Loaded counts the programs attached.
func (s Status) Loaded() int {
	n := 0
	for _, p := range s.Programs {
		if p.Loaded {
			n++
		}
	}
	return n
}

// Hook is the attach point serving a signal, "" when none loaded.
func (s Status) Hook(signal string) string {
	for _, p := range s.Programs {
		if p.Signal == signal && p.Loaded {
			return p.Hook
		}
	}
	return ""
}

// OOMAvailable reports whether OOM kills are seen; StallAvailable whether reclaim stalls are.
func (s Status) OOMAvailable() bool { return s.Hook(SignalOOM) != "" }

// StallAvailable reports whether both ends of a reclaim pass are traced.
func (s Status) StallAvailable() bool {
	return s.Hook(SignalReclaimBegin) != "" && s.Hook(SignalReclaimEnd) != ""
}

// String is the one-line summary the agent logs and the debug view shows.
func (s Status) String() string {
	if s.Reason != "" {
		return "off: " + s.Reason
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d programs loaded", s.Loaded())
	for _, sig := range []string{SignalOOM, SignalReclaimBegin, SignalReclaimEnd} {
		h := s.Hook(sig)
		if h == "" {
			h = "none"
		}
		fmt.Fprintf(&b, "; %s=%s", sig, h)
	}
	return b.String()
}

// OOMKill is one victim of the OOM killer.
type OOMKill struct {
	At time.Time
	// PID is the victim's thread-group id; TriggerPID the task whose allocation triggered
	// the kill.
	PID, TriggerPID uint32
	Comm            string
	// CgroupID is the victim's cgroup on the default (v2) hierarchy; MemcgID its memory
	// controller's cgroup (on v1 the memory hierarchy's directory; on v2 the same or the
	// nearest ancestor with the controller). Both equal the inode number of the cgroup
	// directory. LimitMemcgID is the memcg found at its limit (0: none, a node OOM).
	CgroupID, MemcgID, LimitMemcgID uint64
	// RSS of the victim at the kill.
	AnonBytes, FileBytes, ShmemBytes uint64
	// Hook is the attach point that saw it. CgroupFromTrigger: the classic tracepoint has
	// no victim task, so the cgroup ids are the triggering task's.
	Hook              string
	CgroupFromTrigger bool
}

// ProgramStat is one program's kernel-side cost.
type ProgramStat struct {
	Runs    uint64
	Runtime time.Duration
}

// Stall is the limit-reclaim time of one memory cgroup since the programs loaded.
type Stall struct {
	Count, TotalNs, MaxNs, ReclaimedPages uint64
}
