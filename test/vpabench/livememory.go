package main

import (
	"context"
	"time"

	"github.com/ballastk8s/ballast/test/sandbox"
)

// liveMemory is ballast-control's memory sampled every second over the live run: what a
// kubelet's limits.memory would act on. VmHWM counts the binary's file pages too, which the
// kernel drops and reads again under a limit; anonymous memory is what it cannot.
type liveMemory struct {
	Samples int
	// AnonPeakMiB is the highest RssAnon seen; FileAtAnonPeakMiB the RssFile beside it.
	AnonPeakMiB, FileAtAnonPeakMiB float64
	// Cgroup is set when ballast-control ran in a memory cgroup with a hard limit.
	Cgroup *liveCgroup `json:",omitempty"`
}

type liveCgroup struct {
	LimitMiB    float64
	MaxUsageMiB float64 // memory.max_usage_in_bytes (page cache included)
	RSSPeakMiB  float64 // highest memory.stat rss sampled
	FailCnt     int64   // charges that hit the limit (the kernel reclaimed page cache)
	OOMKills    int64
	MajorFaults int64 // pages read back from disk: thousands mean the program thrashes on its own code
}

// sample polls until ctx ends, then reads the cgroup's counters once more.
func (m *liveMemory) sample(ctx context.Context, s *sandbox.Sandbox) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if ps, ok := s.ProcStats()["ballast-control"]; ok {
			m.Samples++
			if ps.AnonMiB > m.AnonPeakMiB {
				m.AnonPeakMiB, m.FileAtAnonPeakMiB = ps.AnonMiB, ps.FileMiB
			}
		}
		m.readCgroup(s)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *liveMemory) readCgroup(s *sandbox.Sandbox) {
	if s.ControlCgroup == nil {
		return
	}
	st, err := s.ControlCgroup.Stats()
	if err != nil {
		return
	}
	if m.Cgroup == nil {
		m.Cgroup = &liveCgroup{}
	}
	c := m.Cgroup
	c.LimitMiB, c.MaxUsageMiB, c.FailCnt, c.OOMKills, c.MajorFaults = st.LimitMiB, st.MaxUsageMiB, st.FailCnt, st.OOMKills, st.MajorFaults
	c.RSSPeakMiB = max(c.RSSPeakMiB, st.RSSMiB)
}
