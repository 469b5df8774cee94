package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStat is one process's footprint: CPU time since it started and its resident set.
type ProcStat struct {
	CPUSeconds      float64
	RSSMiB, PeakMiB float64 // VmRSS and VmHWM
	// AnonMiB and FileMiB split RSSMiB: anonymous memory (the heap, stacks) and file pages
	// (the binary's text and data, which the kernel can drop and read again under a limit).
	AnonMiB, FileMiB float64
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on Linux).
const clockTicks = 100

// ReadProcStat reads /proc/<pid>/stat and /proc/<pid>/status.
func ReadProcStat(pid int) (ProcStat, error) {
	var st ProcStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	// Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
	rest := string(b)[strings.LastIndexByte(string(b), ')')+2:]
	f := strings.Fields(rest)
	if len(f) < 13 {
		return st, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	stt, _ := strconv.ParseFloat(f[12], 64)
	st.CPUSeconds = (ut + stt) / clockTicks
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fs[1], 64)
		switch fs[0] {
		case "VmRSS:":
			st.RSSMiB = kb / 1024
		case "VmHWM:":
			st.PeakMiB = kb / 1024
		case "RssAnon:":
			st.AnonMiB = kb / 1024
		case "RssFile:":
			st.FileMiB = kb / 1024
		}
	}
	return st, nil
}

// ProcStats returns the footprint of the sandbox's long-running processes by name
// (ballast-control, ballast-node-<node>, vpa-*, metrics-server, kwok, ...) and of Valkey.
func (s *Sandbox) ProcStats() map[string]ProcStat {
	out := map[string]ProcStat{}
	for _, p := range s.procs {
		if done, _ := p.Exited(); done || p.Cmd.Process == nil {
			continue
		}
		if st, err := ReadProcStat(p.Pid()); err == nil {
			out[p.Name] = st
		}
	}
	if s.Valkey != nil {
		if st, err := ReadProcStat(s.Valkey.Pid()); err == nil {
			out["valkey"] = st
		}
	}
	return out
}
