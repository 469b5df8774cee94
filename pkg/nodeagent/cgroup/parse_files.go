package cgroup

import "fmt"

// CPUStat is cgroup v2 cpu.stat. Times are cumulative microseconds since the cgroup was
// created. Only usage_usec is required; the cpu controller adds the throttling counters.
type CPUStat struct {
	UsageUsec     uint64
	UserUsec      uint64
	SystemUsec    uint64
	NrPeriods     uint64
	NrThrottled   uint64
	ThrottledUsec uint64
}

// ParseCPUStat parses cgroup v2 cpu.stat.
func ParseCPUStat(data []byte) (CPUStat, error) {
	kv, err := ParseFlatKeyed(data)
	if err != nil {
		return CPUStat{}, fmt.Errorf("parsing cpu.stat: %w", err)
	}
	var s CPUStat
	if err := required("cpu.stat", kv, map[string]*uint64{"usage_usec": &s.UsageUsec}); err != nil {
		return CPUStat{}, err
	}
	optional(kv, map[string]*uint64{
		"user_usec": &s.UserUsec, "system_usec": &s.SystemUsec, "nr_periods": &s.NrPeriods,
		"nr_throttled": &s.NrThrottled, "throttled_usec": &s.ThrottledUsec,
	})
	return s, nil
}

// MemoryStat is cgroup v2 memory.stat, in bytes. InactiveFileBytes is required (it is what
// the working set subtracts); the other named fields are 0 when absent. Keys holds every
// key of the file, including ones newer kernels add.
type MemoryStat struct {
	AnonBytes         uint64
	FileBytes         uint64
	ActiveFileBytes   uint64
	InactiveFileBytes uint64
	ShmemBytes        uint64
	Keys              map[string]uint64
}

// ParseMemoryStat parses cgroup v2 memory.stat.
func ParseMemoryStat(data []byte) (MemoryStat, error) {
	kv, err := ParseFlatKeyed(data)
	if err != nil {
		return MemoryStat{}, fmt.Errorf("parsing memory.stat: %w", err)
	}
	s := MemoryStat{Keys: kv}
	if err := required("memory.stat", kv, map[string]*uint64{"inactive_file": &s.InactiveFileBytes}); err != nil {
		return MemoryStat{}, err
	}
	optional(kv, map[string]*uint64{
		"anon": &s.AnonBytes, "file": &s.FileBytes, "active_file": &s.ActiveFileBytes, "shmem": &s.ShmemBytes,
	})
	return s, nil
}

// MemoryStatV1 is cgroup v1 memory.stat, in bytes. The total_* keys include descendants;
// TotalInactiveFileBytes is required (the kubelet's working set subtracts it).
type MemoryStatV1 struct {
	TotalInactiveFileBytes uint64
	TotalActiveFileBytes   uint64
	TotalRSSBytes          uint64
	TotalCacheBytes        uint64
	TotalShmemBytes        uint64
	Keys                   map[string]uint64
}

// ParseMemoryStatV1 parses cgroup v1 memory.stat.
func ParseMemoryStatV1(data []byte) (MemoryStatV1, error) {
	kv, err := ParseFlatKeyed(data)
	if err != nil {
		return MemoryStatV1{}, fmt.Errorf("parsing v1 memory.stat: %w", err)
	}
	s := MemoryStatV1{Keys: kv}
	if err := required("v1 memory.stat", kv, map[string]*uint64{"total_inactive_file": &s.TotalInactiveFileBytes}); err != nil {
		return MemoryStatV1{}, err
	}
	optional(kv, map[string]*uint64{
		"total_active_file": &s.TotalActiveFileBytes, "total_rss": &s.TotalRSSBytes,
		"total_cache": &s.TotalCacheBytes, "total_shmem": &s.TotalShmemBytes,
	})
	return s, nil
}

// MemoryEvents is cgroup v2 memory.events or memory.events.local: cumulative counts.
//
// Where the kernel counts (mm/memcontrol.c, visible in the fixtures' scenario3): Max and
// OOM are counted in the cgroup whose limit was hit; OOMKill is counted in the cgroup the
// killed process lives in. memory.events adds the counts of all descendants,
// memory.events.local holds only the cgroup's own.
type MemoryEvents struct {
	Low          uint64
	High         uint64
	Max          uint64
	OOM          uint64
	OOMKill      uint64
	OOMGroupKill uint64
}

// ParseMemoryEvents parses memory.events or memory.events.local. "oom" and "oom_kill" are
// required: every kernel that runs the kubelet on cgroup v2 writes them, so their absence
// means a truncated or foreign file.
func ParseMemoryEvents(data []byte) (MemoryEvents, error) {
	kv, err := ParseFlatKeyed(data)
	if err != nil {
		return MemoryEvents{}, fmt.Errorf("parsing memory.events: %w", err)
	}
	var e MemoryEvents
	if err := required("memory.events", kv, map[string]*uint64{"oom": &e.OOM, "oom_kill": &e.OOMKill}); err != nil {
		return MemoryEvents{}, err
	}
	optional(kv, map[string]*uint64{"low": &e.Low, "high": &e.High, "max": &e.Max, "oom_group_kill": &e.OOMGroupKill})
	return e, nil
}

// OOMControl is cgroup v1 memory.oom_control. OOMKill (kernel ≥ 4.13) counts processes
// killed by the OOM killer in this cgroup; HasOOMKill is false on older kernels.
type OOMControl struct {
	OOMKillDisable bool
	UnderOOM       bool
	OOMKill        uint64
	HasOOMKill     bool
}

// ParseOOMControl parses cgroup v1 memory.oom_control.
func ParseOOMControl(data []byte) (OOMControl, error) {
	kv, err := ParseFlatKeyed(data)
	if err != nil {
		return OOMControl{}, fmt.Errorf("parsing memory.oom_control: %w", err)
	}
	var disable, under uint64
	if err := required("memory.oom_control", kv, map[string]*uint64{"oom_kill_disable": &disable, "under_oom": &under}); err != nil {
		return OOMControl{}, err
	}
	c := OOMControl{OOMKillDisable: disable != 0, UnderOOM: under != 0}
	c.OOMKill, c.HasOOMKill = kv["oom_kill"]
	return c, nil
}
