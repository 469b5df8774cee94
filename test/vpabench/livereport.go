package main

import (
	"fmt"
	"sort"
	"strings"
)

// liveMarkdown is the live ballast-control run as a table (printed below the scale table
// when -ballast-live names its JSON).
func liveMarkdown(l *LiveScale) string {
	var s strings.Builder
	history := "2 h backlog"
	if l.HistoryDays > 0 {
		history = fmt.Sprintf("%d days of daily rollups and a 2 h backlog", l.HistoryDays)
	}
	fmt.Fprintf(&s, "\nLive ballast-control (`make bench-scale-live`): %d nodes, %d enrolled pods, %d profiles, %d series; retention %s, %s; sampling interval %s, agents flushing every %s; load average %s.\n\n",
		l.Nodes, l.Pods, l.Profiles, l.Series, l.Retention, history, l.SamplingInterval, l.FlushInterval, strings.Join(l.LoadAverage, " → "))
	s.WriteString("| measure | live ballast-control |\n|---|---:|\n")
	row := func(k, f string, a ...any) { fmt.Fprintf(&s, "| %s | %s |\n", k, fmt.Sprintf(f, a...)) }
	row("pod creates (churn)", "%d enrolled + %d baseline in %.0f s (%.0f/s), %d errors", l.Pods, l.BaselinePods, l.ChurnS, l.ChurnRate, l.CreateErrors)
	row("create latency, webhook in the path: p50 / p99", "%.1f / %.1f ms (baseline, webhook skipped: %.1f / %.1f ms; p99 ratio %.2f)",
		l.CreateP50, l.CreateP99, l.BaselineP50, l.BaselineP99, quotient(l.CreateP99, l.BaselineP99))
	row("webhook server time (controller-runtime histogram)", "mean %.2f ms; p50 ≤ %.0f ms, p99 ≤ %.0f ms (bucket bounds)", l.WebhookMeanMs, l.WebhookServerP50, l.WebhookServerP99)
	row("churn start → every profile has its measurementHash", "%.0f s", l.EnrolledS)
	row("every profile recomputed once: cold (backlog read) / steady", "%.1f / %.1f s", l.ColdPassS, l.SteadyPassS)
	row("profile reconciles/s (needed: profiles ÷ interval)", "%.0f (%.0f), %.0f workers, mean %.1f ms, queue wait %.1f ms, max depth %.0f, %0.f errors",
		l.ReconcilesPerS, l.NeededPerS, l.Workers, l.ReconcileMeanMs, l.QueueWaitMeanMs, l.QueueDepthMax, l.ReconcileErrors)
	row("age of profiles' newest statistics at the end: median / oldest", "%.0f / %.0f s (%d without statistics; median %d samples per cpu series)", l.MedianAgeS, l.StalestS, l.Unrecomputed, l.MedianSamples)
	row("ballast-control once enrolled: RSS / peak / Go heap in use", "%.0f / %.0f / %.0f MiB", l.EnrolledRSSMiB, l.EnrolledPeakMiB, l.EnrolledHeapMiB)
	row("ballast-control peak RSS after the cold pass", "%.0f MiB", l.ColdPeakMiB)
	if len(l.PassQueueLeft) > 0 {
		row("passes whose queue never emptied (agents requeue faster than profiles are computed): depth left", "%v", l.PassQueueLeft)
	}
	if m := l.Memory; m.Samples > 0 {
		row("ballast-control anonymous memory, sampled every second: peak", "%.0f MiB (file pages beside it %.0f MiB; %d samples)", m.AnonPeakMiB, m.FileAtAnonPeakMiB, m.Samples)
	}
	if c := l.Memory.Cgroup; c != nil {
		row("in a memory cgroup limited to "+fmt.Sprintf("%.0f MiB", c.LimitMiB), "max usage %.0f MiB (page cache included), anonymous peak %.0f MiB, %d charges at the limit, %d major faults, **%d OOM kills**",
			c.MaxUsageMiB, c.RSSPeakMiB, c.FailCnt, c.MajorFaults, c.OOMKills)
	}
	row("ballast-control RSS: end / peak; CPU", "%.0f / %.0f MiB; %.2f cores", l.ControlRSSMiB, l.ControlPeakMiB, l.ControlCPUCores)
	row("Valkey", "%.0f commands/s, %.0f MiB used (%.0f MiB RSS)", l.ValkeyOpsPerS, l.ValkeyUsedMiB, l.ValkeyRSSMiB)
	row("API-server writes per minute (steady)", "%s", perMinList(l.WritesPerMin))
	return s.String()
}

func quotient(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func perMinList(m map[string]float64) string {
	var total float64
	var parts []string
	for k, v := range m {
		total += v
		parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%s (all: %.0f)", strings.Join(parts, ", "), total)
}
