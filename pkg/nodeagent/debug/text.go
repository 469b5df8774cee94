package debug

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// WriteText renders a report for a terminal.
func WriteText(w io.Writer, r Report) error {
	b := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	ago := func(t time.Time) string { return since(r.Time, t) }

	p("ballast-node on %s at %s", r.Node, r.Time.UTC().Format(time.RFC3339))
	cfg := fmt.Sprintf("synced=%t ballastconfig=%t retention=%s", r.Config.Synced, r.Config.BallastConfigFound, r.Config.Retention)
	if r.Config.Paused != "" {
		cfg += "  PAUSED: " + r.Config.Paused
	}
	p("config:  %s", cfg)

	st := r.Store
	state := "DISCONNECTED"
	if st.Connected {
		state = "connected"
	}
	p("valkey:  %s %s  last flush %s (%d windows, %s)  consecutive failures %d  written %d windows / %d samples",
		st.URL, state, ago(st.LastFlush), st.LastFlushWindows, orDash(st.LastFlushDuration), st.ConsecutiveFailures,
		st.FlushedWindows, st.FlushedSamples)
	if st.Full {
		p("         store FULL (maxmemory): flushes are refused, windows stay buffered")
	}
	if st.LastError != "" {
		p("         last error %s: %s", ago(st.LastErrorAt), st.LastError)
	}
	bf := r.Buffer
	p("buffer:  filed %d/%d windows  pending %d/%d  dropped %s  oom events queued %d",
		bf.Filed, bf.FiledLimit, bf.Pending, bf.PendingLimit, counts(bf.Dropped), r.OOMQueued)
	for _, s := range r.Sources {
		line := fmt.Sprintf("source:  %-8s %s  last run %s (%s)  runs %d  errors %d", s.Name, s.Detail, ago(s.LastRun),
			orDash(s.LastDuration), s.Runs, s.Errors)
		if s.LastError != "" {
			line += fmt.Sprintf("\n         last error %s: %s", ago(s.LastErrorAt), s.LastError)
		}
		p("%s", line)
	}

	p("\npods (%d):", len(r.Pods))
	for _, pod := range r.Pods {
		profile := pod.ProfileRef
		if profile == "" {
			profile = "(not stamped)"
		}
		hash := pod.Hash
		if hash == "" {
			hash = "(no hash)"
		}
		flags := ""
		if pod.Unbound {
			flags += "  UNBOUND: samples held pending"
		}
		if pod.ProfileRefIgnored {
			flags += "  PROFILE-REF IGNORED: not the profile the pod's labels resolve to"
		}
		if pod.Terminating {
			flags += "  terminating"
		}
		p("  %s/%s  uid=%s mode=%s qos=%s interval=%s", pod.Namespace, pod.Name, pod.UID, pod.Mode, pod.QOS, pod.Interval)
		p("    profile=%s hash=%s policy=%s%s", profile, hash, orDash(pod.PolicyRef), flags)
		for _, c := range pod.Containers {
			kind := ""
			if c.Sidecar {
				kind = " (sidecar)"
			}
			p("    %s%s  %s", c.Name, kind, orDash(c.ContainerID))
			if c.CgroupMemory != "" {
				p("      cgroup   %s  oom-watch=%t", c.CgroupMemory, c.OOMWatched)
				if c.CgroupCPU != c.CgroupMemory {
					p("      cpu cg   %s", c.CgroupCPU)
				}
			}
			for _, s := range c.Last {
				exact := ""
				if s.Exact != nil && !*s.Exact {
					exact = " (max of samples)"
				}
				p("      %-26s %12s  %s via %s%s", s.Signal, Format(s.Signal, s.Value), ago(s.At), s.Source, exact)
			}
			for _, e := range c.Errors {
				p("      error %-8s x%d, last %s: %s", e.Source, e.Count, ago(e.At), e.Message)
			}
			if st := c.ReclaimStall; st != nil {
				p("      reclaim stall %s over %s (%.1f%%, %d passes, %d pages; longest %s; total %s in %d passes)  memcg %d",
					st.Stalled, st.Interval, 100*st.Fraction, st.Passes, st.ReclaimedPages, st.MaxPass, st.TotalStalled, st.TotalPasses, st.MemcgID)
			}
			if mp := c.MemoryPressure; mp != nil {
				p("      memory pressure %.1f%% stalled over %s via %s, %s", float64(mp.StallPerSec)/1e4, mp.Interval, mp.Source, ago(mp.At))
			}
			if len(c.OOMKills) > 0 {
				p("      oom kills %s", counts(c.OOMKills))
			}
		}
	}

	p("\nseries (%d):", len(r.Series))
	for _, s := range r.Series {
		owner := "profile " + s.Profile
		if s.Pod != "" {
			owner = "pending pod " + s.Pod
		}
		ctr := s.Container
		if ctr == "" {
			ctr = "(pod)"
		}
		p("  %s %s/%s/%s  recorded %d  written %d", owner, ctr, s.Resource, s.Signal, s.Recorded, s.Flushed)
		sig := s.Resource + "/" + s.Signal
		for _, w := range s.Windows {
			p("    window %s  n=%d min=%s p50=%s p95=%s max=%s mean=%s  %s..%s", w.Start.UTC().Format("15:04:05"), w.Count,
				Format(sig, w.Min), Format(sig, w.P50), Format(sig, w.P95), Format(sig, w.Max), Format(sig, w.Mean),
				w.First.UTC().Format("15:04:05"), w.Last.UTC().Format("15:04:05"))
		}
	}
	return b.Flush()
}

// Format renders a value of signal ("<resource>/<signal>"): cpu in millicores, everything
// else in bytes with a binary unit.
func Format(signal string, v float64) string {
	if strings.HasPrefix(signal, "cpu") {
		return fmt.Sprintf("%.0fm", v)
	}
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2fGi", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.2fMi", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.2fKi", v/(1<<10))
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func since(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t).Round(100 * time.Millisecond)
	if d < 0 {
		return "in " + (-d).String()
	}
	return d.String() + " ago"
}

func counts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
