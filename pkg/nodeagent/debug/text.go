package debug

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText renders a report for a terminal, like kubectl describe: a header of key facts,
// then one table per kind of thing (sources, pods, last samples, cgroups, series), with
// problems and held windows listed under their tables. It is the one text rendering of the
// report: the agent's endpoint serves it for ?format=text and `kubectl ballast node` prints
// it. agent names the agent pod ("namespace/name") when the caller knows it; "" leaves the
// row out.
func WriteText(w io.Writer, r Report, agent string) error {
	b := bufio.NewWriter(w)
	ago := func(t time.Time) string { return since(r.Time, t) }
	kv := newTable(b)
	kv.row("Node:", r.Node)
	if agent != "" {
		kv.row("Agent:", agent)
	}
	kv.row("Report time:", r.Time.UTC().Format(time.RFC3339))
	disc := fmt.Sprintf("synced=%t  BallastConfig=%s  retention=%s", r.Config.Synced, found(r.Config.BallastConfigFound), r.Config.Retention)
	if r.Config.Paused != "" {
		disc += "  PAUSED: " + r.Config.Paused
	}
	kv.row("Discovery:", disc)
	st := r.Store
	state := "DISCONNECTED"
	if st.Connected {
		state = "connected"
	}
	kv.row("Valkey:", fmt.Sprintf("%s  %s  last flush %s (%d windows, %s)  written %d windows / %d samples",
		state, st.URL, ago(st.LastFlush), st.LastFlushWindows, orDash(st.LastFlushDuration), st.FlushedWindows, st.FlushedSamples))
	if st.Full {
		kv.row("", "store FULL (maxmemory): flushes are refused, windows stay buffered")
	}
	if st.LastError != "" {
		kv.row("", fmt.Sprintf("last error %s (%d consecutive failures): %s", ago(st.LastErrorAt), st.ConsecutiveFailures, st.LastError))
	}
	bf := r.Buffer
	kv.row("Buffer:", fmt.Sprintf("filed %d/%d windows  pending %d/%d  dropped %s  OOM events queued %d",
		bf.Filed, bf.FiledLimit, bf.Pending, bf.PendingLimit, counts(bf.Dropped), r.OOMQueued))
	if err := kv.flush(); err != nil {
		return err
	}

	fmt.Fprintln(b, "\nSources:")
	t := newTable(b)
	t.row("  SOURCE", "DETAIL", "LAST RUN", "RUNS", "ERRORS", "LAST ERROR")
	for _, s := range r.Sources {
		last := "-"
		if s.LastError != "" {
			last = ago(s.LastErrorAt) + ": " + s.LastError
		}
		t.row("  "+s.Name, orDash(s.Detail), ago(s.LastRun), strconv.FormatInt(s.Runs, 10), strconv.FormatInt(s.Errors, 10), last)
	}
	if err := t.flush(); err != nil {
		return err
	}

	fmt.Fprintf(b, "\nPods (%d):\n", len(r.Pods))
	if len(r.Pods) > 0 {
		if err := writePods(b, r.Pods, ago); err != nil {
			return err
		}
	}

	fmt.Fprintf(b, "\nSeries (%d):\n", len(r.Series))
	if len(r.Series) > 0 {
		if err := writeSeries(b, r.Series); err != nil {
			return err
		}
	}
	return b.Flush()
}

// writePods renders the pods table, the last samples, the containers' cgroups and the
// problems (errors, OOM kills, reclaim stalls, memory pressure).
func writePods(b io.Writer, pods []PodReport, ago func(time.Time) string) error {
	t := newTable(b)
	t.row("  POD", "MODE", "QOS", "INTERVAL", "PROFILE", "HASH", "POLICY", "STATE")
	for _, p := range pods {
		state := "bound"
		if p.Unbound {
			state = "unbound (samples held)"
		}
		if p.ProfileRefIgnored {
			state = "profile-ref ignored (not its labels' profile; samples held)"
		}
		if p.Terminating {
			state += ", terminating"
		}
		t.row("  "+p.Namespace+"/"+p.Name, p.Mode, p.QOS, p.Interval, orDash(p.ProfileRef), orDash(p.Hash), orDash(p.PolicyRef), state)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(b, "\nLast samples:")
	t = newTable(b)
	t.row("  POD", "CONTAINER", "SIGNAL", "VALUE", "AGE", "SOURCE")
	cg := newTable(b)
	cg.row("  POD", "CONTAINER", "CONTAINER ID", "CGROUP", "OOM WATCH")
	cgroups := false
	var problems []string
	for _, p := range pods {
		for _, c := range p.Containers {
			name := c.Name
			if c.Sidecar {
				name += " (sidecar)"
			}
			if len(c.Last) == 0 {
				t.row("  "+p.Name, name, "-", "-", "-", "-")
			}
			for _, s := range c.Last {
				src := s.Source
				if s.Exact != nil && !*s.Exact {
					src += " (max of samples)"
				}
				t.row("  "+p.Name, name, s.Signal, Format(s.Signal, s.Value), ago(s.At), src)
			}
			if c.CgroupMemory != "" {
				cgroups = true
				cg.row("  "+p.Name, name, orDash(c.ContainerID), c.CgroupMemory, strconv.FormatBool(c.OOMWatched))
				if c.CgroupCPU != "" && c.CgroupCPU != c.CgroupMemory {
					cg.row("", "", "", c.CgroupCPU+" (cpu)", "")
				}
			}
			at := "  " + p.Name + "/" + c.Name + ": "
			for _, e := range c.Errors {
				problems = append(problems, fmt.Sprintf("%s%s error x%d, last %s: %s", at, e.Source, e.Count, ago(e.At), e.Message))
			}
			if len(c.OOMKills) > 0 {
				problems = append(problems, at+"OOM kills "+counts(c.OOMKills))
			}
			if st := c.ReclaimStall; st != nil {
				problems = append(problems, fmt.Sprintf("%sreclaim stall %s over %s (%.1f%%, %d passes, %d pages; longest %s; total %s in %d passes)  memcg %d",
					at, st.Stalled, st.Interval, 100*st.Fraction, st.Passes, st.ReclaimedPages, st.MaxPass, st.TotalStalled, st.TotalPasses, st.MemcgID))
			}
			if mp := c.MemoryPressure; mp != nil && mp.StallPerSec > 0 {
				problems = append(problems, fmt.Sprintf("%smemory pressure %.1f%% stalled over %s via %s, %s",
					at, float64(mp.StallPerSec)/1e4, mp.Interval, mp.Source, ago(mp.At)))
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if cgroups {
		fmt.Fprintln(b, "\nCgroups:")
		if err := cg.flush(); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		fmt.Fprintln(b, "\nProblems:")
		for _, line := range problems {
			fmt.Fprintln(b, line)
		}
	}
	return nil
}

// writeSeries renders the series table, then every window still held in the agent.
func writeSeries(b io.Writer, series []SeriesReport) error {
	t := newTable(b)
	t.row("  OWNER", "CONTAINER", "SIGNAL", "RECORDED", "WRITTEN", "HELD WINDOWS", "HELD MIN..MAX")
	held := newTable(b)
	held.row("  OWNER", "CONTAINER", "SIGNAL", "WINDOW", "N", "MIN", "P50", "P95", "MAX", "MEAN", "FIRST..LAST")
	anyHeld := false
	for _, s := range series {
		owner := "profile " + s.Profile
		if s.Pod != "" {
			owner = "pod " + s.Pod + " (pending)"
		}
		ctr := s.Container
		if ctr == "" {
			ctr = "(pod)"
		}
		sig := s.Resource + "/" + s.Signal
		span := "-"
		if len(s.Windows) > 0 {
			lo, hi := s.Windows[0].Min, s.Windows[0].Max
			for _, w := range s.Windows[1:] {
				lo, hi = min(lo, w.Min), max(hi, w.Max)
			}
			span = Format(sig, lo) + ".." + Format(sig, hi)
		}
		t.row("  "+owner, ctr, sig, strconv.FormatInt(s.Recorded, 10), strconv.FormatInt(s.Flushed, 10),
			strconv.Itoa(len(s.Windows)), span)
		for _, w := range s.Windows {
			anyHeld = true
			held.row("  "+owner, ctr, sig, w.Start.UTC().Format("15:04:05"), strconv.FormatInt(w.Count, 10),
				Format(sig, w.Min), Format(sig, w.P50), Format(sig, w.P95), Format(sig, w.Max), Format(sig, w.Mean),
				w.First.UTC().Format("15:04:05")+".."+w.Last.UTC().Format("15:04:05"))
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if anyHeld {
		fmt.Fprintln(b, "\nHeld windows:")
		return held.flush()
	}
	return nil
}

// table aligns cells in columns three spaces apart.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table { return &table{tw: tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)} }

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

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

// since is how long before now t was, rounded to a tenth of a second; "never" for zero.
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

func found(b bool) string {
	if b {
		return "found"
	}
	return "MISSING"
}

func counts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+strconv.FormatInt(m[k], 10))
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
