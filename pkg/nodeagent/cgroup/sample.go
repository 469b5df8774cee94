package cgroup

import (
	"errors"
	"fmt"
	"time"
)

// Sample is one reading of a cgroup's files. A part that could not be read is marked
// absent (HasCPU, HasMemory, …) and its error returned by ReadSample; it is never guessed.
type Sample struct {
	Time time.Time

	// HasCPU: CPU holds cpu.stat usage_usec (v2) or cpuacct.usage (v1).
	HasCPU bool
	CPU    CPUCounter

	// HasMemory: the three memory fields below were read from one memory.current (v1:
	// memory.usage_in_bytes) and memory.stat pair.
	HasMemory         bool
	MemoryUsageBytes  uint64
	InactiveFileBytes uint64
	WorkingSetBytes   uint64

	// HasMemoryLimit: MemoryLimitBytes is memory.max (v1: memory.limit_in_bytes), Unlimited
	// when there is none.
	HasMemoryLimit   bool
	MemoryLimitBytes uint64

	// HasOOMKills: OOMKills is the cumulative oom_kill count of the cgroup (v2:
	// memory.events; v1: memory.oom_control, kernel ≥ 4.13).
	HasOOMKills bool
	OOMKills    uint64

	// Pressure-stall information, nil on v1 or when the kernel does not provide it.
	CPUPressure    *PSI
	MemoryPressure *PSI
}

// ReadSample reads every signal file of loc. The sample holds what could be read; the
// error joins one wrapped error per part that could not (cpu, memory, limit, oom, psi).
// A missing optional file (PSI, oom_kill on an old v1 kernel) is not an error.
func (r *Reader) ReadSample(loc Location, now time.Time) (Sample, error) {
	return r.readSample(r, loc, now)
}

// readSample is ReadSample reading through src.
func (r *Reader) readSample(src fileSource, loc Location, now time.Time) (Sample, error) {
	s := Sample{Time: now}
	var errs []error
	if loc.Version != r.version {
		return s, fmt.Errorf("reading %s: location is cgroup %v, reader is %v", loc.MemoryDir, loc.Version, r.version)
	}
	if r.version == V1 {
		errs = readV1(src, loc, &s)
	} else {
		errs = readV2(src, loc, &s)
	}
	return s, errors.Join(errs...)
}

func readV2(src fileSource, loc Location, s *Sample) []error {
	var errs []error
	if st, err := readParsed(src, loc.CPUDir, "cpu.stat", ParseCPUStat); err != nil {
		errs = append(errs, err)
	} else if ns, err := usecToNanos(st.UsageUsec); err != nil {
		errs = append(errs, fmt.Errorf("reading %s/cpu.stat: %w", loc.CPUDir, err))
	} else {
		s.CPU, s.HasCPU = CPUCounter{UsageNanos: ns, Time: s.Time}, true
	}

	// memory.current is read before memory.stat: both move, and the kubelet reads them in
	// this order too. The pair is only used when both parse.
	cur, err := readParsed(src, loc.MemoryDir, "memory.current", ParseSingleValue)
	if err == nil {
		var inactive uint64
		if inactive, err = readParsed(src, loc.MemoryDir, "memory.stat", ParseMemoryStatInactiveFile); err == nil {
			s.setMemory(cur, inactive)
		}
	}
	if err != nil {
		errs = append(errs, err)
	}

	if limit, err := readParsed(src, loc.MemoryDir, "memory.max", ParseMemoryMax); err != nil {
		errs = append(errs, err)
	} else {
		s.MemoryLimitBytes, s.HasMemoryLimit = limit, true
	}
	if ev, err := readParsed(src, loc.MemoryDir, "memory.events", ParseMemoryEvents); err != nil {
		errs = append(errs, err)
	} else {
		s.OOMKills, s.HasOOMKills = ev.OOMKill, true
	}
	for _, f := range []struct {
		dir, name string
		dst       **PSI
	}{{loc.CPUDir, "cpu.pressure", &s.CPUPressure}, {loc.MemoryDir, "memory.pressure", &s.MemoryPressure}} {
		p, err := readParsed(src, f.dir, f.name, ParsePSI)
		switch {
		case err == nil:
			*f.dst = &p
		case !isAbsent(err):
			errs = append(errs, err)
		}
	}
	return errs
}

func readV1(src fileSource, loc Location, s *Sample) []error {
	var errs []error
	if ns, err := readParsed(src, loc.CPUDir, "cpuacct.usage", ParseSingleValue); err != nil {
		errs = append(errs, err)
	} else {
		s.CPU, s.HasCPU = CPUCounter{UsageNanos: ns, Time: s.Time}, true
	}

	usage, err := readParsed(src, loc.MemoryDir, "memory.usage_in_bytes", ParseSingleValue)
	if err == nil {
		var inactive uint64
		if inactive, err = readParsed(src, loc.MemoryDir, "memory.stat", ParseMemoryStatV1InactiveFile); err == nil {
			s.setMemory(usage, inactive)
		}
	}
	if err != nil {
		errs = append(errs, err)
	}

	if limit, err := readParsed(src, loc.MemoryDir, "memory.limit_in_bytes", ParseV1Limit); err != nil {
		errs = append(errs, err)
	} else {
		s.MemoryLimitBytes, s.HasMemoryLimit = limit, true
	}
	if oc, err := readParsed(src, loc.MemoryDir, "memory.oom_control", ParseOOMControl); err != nil {
		errs = append(errs, err)
	} else if oc.HasOOMKill {
		s.OOMKills, s.HasOOMKills = oc.OOMKill, true
	}
	return errs
}

func (s *Sample) setMemory(usage, inactiveFile uint64) {
	s.HasMemory = true
	s.MemoryUsageBytes = usage
	s.InactiveFileBytes = inactiveFile
	s.WorkingSetBytes = WorkingSetBytes(usage, inactiveFile)
}
