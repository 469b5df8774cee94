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
	var v [6]uint64
	found, err := scanFlatKeyed(data, cpuStatKeys, v[:])
	if err != nil {
		return CPUStat{}, fmt.Errorf("parsing cpu.stat: %w", err)
	}
	if found&1 == 0 {
		return CPUStat{}, missingKey("cpu.stat", "usage_usec")
	}
	return CPUStat{UsageUsec: v[0], UserUsec: v[1], SystemUsec: v[2], NrPeriods: v[3], NrThrottled: v[4], ThrottledUsec: v[5]}, nil
}

var cpuStatKeys = []string{"usage_usec", "user_usec", "system_usec", "nr_periods", "nr_throttled", "throttled_usec"}

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

// ParseMemoryStatInactiveFile is ParseMemoryStat(data).InactiveFileBytes, with the same
// errors, without building the map of every key: the one value the working set needs,
// read every cycle.
func ParseMemoryStatInactiveFile(data []byte) (uint64, error) {
	var v [1]uint64
	found, err := scanFlatKeyed(data, inactiveFileKey[:], v[:])
	if err != nil {
		return 0, fmt.Errorf("parsing memory.stat: %w", err)
	}
	if found == 0 {
		return 0, missingKey("memory.stat", inactiveFileKey[0])
	}
	return v[0], nil
}

var inactiveFileKey = [1]string{"inactive_file"}

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

// ParseMemoryStatV1InactiveFile is ParseMemoryStatV1(data).TotalInactiveFileBytes, with the
// same errors, without building the map of every key.
func ParseMemoryStatV1InactiveFile(data []byte) (uint64, error) {
	var v [1]uint64
	found, err := scanFlatKeyed(data, totalInactiveFileKey[:], v[:])
	if err != nil {
		return 0, fmt.Errorf("parsing v1 memory.stat: %w", err)
	}
	if found == 0 {
		return 0, missingKey("v1 memory.stat", totalInactiveFileKey[0])
	}
	return v[0], nil
}

var totalInactiveFileKey = [1]string{"total_inactive_file"}

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
	var v [6]uint64
	found, err := scanFlatKeyed(data, memoryEventsKeys, v[:])
	if err != nil {
		return MemoryEvents{}, fmt.Errorf("parsing memory.events: %w", err)
	}
	for i, key := range memoryEventsKeys[:2] {
		if found&(1<<i) == 0 {
			return MemoryEvents{}, missingKey("memory.events", key)
		}
	}
	return MemoryEvents{OOM: v[0], OOMKill: v[1], Low: v[2], High: v[3], Max: v[4], OOMGroupKill: v[5]}, nil
}

// memoryEventsKeys: the required keys first.
var memoryEventsKeys = []string{"oom", "oom_kill", "low", "high", "max", "oom_group_kill"}

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
	var v [3]uint64
	found, err := scanFlatKeyed(data, oomControlKeys, v[:])
	if err != nil {
		return OOMControl{}, fmt.Errorf("parsing memory.oom_control: %w", err)
	}
	for i, key := range oomControlKeys[:2] {
		if found&(1<<i) == 0 {
			return OOMControl{}, missingKey("memory.oom_control", key)
		}
	}
	return OOMControl{OOMKillDisable: v[0] != 0, UnderOOM: v[1] != 0, OOMKill: v[2], HasOOMKill: found&4 != 0}, nil
}

// oomControlKeys: the required keys first.
var oomControlKeys = []string{"oom_kill_disable", "under_oom", "oom_kill"}
