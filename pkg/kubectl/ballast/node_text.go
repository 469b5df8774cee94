package ballast

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
)

// WriteNodeReport renders the agent's report like kubectl describe: a header of key facts,
// then one table per kind of thing (sources, pods, last samples, series windows).
func WriteNodeReport(w io.Writer, agent *corev1.Pod, r debug.Report) error {
	b := bufio.NewWriter(w)
	ago := func(t time.Time) string { return age(r.Time, t) }
	kv := newTable(b)
	kv.row("Node:", r.Node)
	kv.row("Agent:", agent.Namespace+"/"+agent.Name)
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
		state, st.URL, ago(st.LastFlush), st.LastFlushWindows, dash(st.LastFlushDuration), st.FlushedWindows, st.FlushedSamples))
	if st.LastError != "" {
		kv.row("", fmt.Sprintf("last error %s (%d consecutive failures): %s", ago(st.LastErrorAt), st.ConsecutiveFailures, st.LastError))
	}
	bf := r.Buffer
	kv.row("Buffer:", fmt.Sprintf("filed %d/%d windows  pending %d/%d  dropped %s  OOM events queued %d",
		bf.Filed, bf.FiledLimit, bf.Pending, bf.PendingLimit, countList(bf.Dropped), r.OOMQueued))
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
		t.row("  "+s.Name, dash(s.Detail), ago(s.LastRun), strconv.FormatInt(s.Runs, 10), strconv.FormatInt(s.Errors, 10), last)
	}
	if err := t.flush(); err != nil {
		return err
	}

	fmt.Fprintf(b, "\nPods (%d):\n", len(r.Pods))
	if len(r.Pods) > 0 {
		t = newTable(b)
		t.row("  POD", "MODE", "QOS", "INTERVAL", "PROFILE", "HASH", "POLICY", "STATE")
		for _, p := range r.Pods {
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
			t.row("  "+p.Namespace+"/"+p.Name, p.Mode, p.QOS, p.Interval, dash(p.ProfileRef), dash(p.Hash), dash(p.PolicyRef), state)
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintln(b, "\nLast samples:")
		t = newTable(b)
		t.row("  POD", "CONTAINER", "SIGNAL", "VALUE", "AGE", "SOURCE")
		var problems []string
		for _, p := range r.Pods {
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
					t.row("  "+p.Name, name, s.Signal, debug.Format(s.Signal, s.Value), ago(s.At), src)
				}
				for _, e := range c.Errors {
					problems = append(problems, fmt.Sprintf("  %s/%s: %s error x%d, last %s: %s", p.Name, c.Name, e.Source, e.Count, ago(e.At), e.Message))
				}
				if len(c.OOMKills) > 0 {
					problems = append(problems, fmt.Sprintf("  %s/%s: OOM kills %s", p.Name, c.Name, countList(c.OOMKills)))
				}
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
		if len(problems) > 0 {
			fmt.Fprintln(b, "\nProblems:")
			for _, line := range problems {
				fmt.Fprintln(b, line)
			}
		}
	}

	fmt.Fprintf(b, "\nSeries (%d):\n", len(r.Series))
	if len(r.Series) > 0 {
		t = newTable(b)
		t.row("  OWNER", "CONTAINER", "SIGNAL", "RECORDED", "WRITTEN", "HELD WINDOWS", "HELD MIN..MAX")
		for _, s := range r.Series {
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
				span = debug.Format(sig, lo) + ".." + debug.Format(sig, hi)
			}
			t.row("  "+owner, ctr, sig, strconv.FormatInt(s.Recorded, 10), strconv.FormatInt(s.Flushed, 10),
				strconv.Itoa(len(s.Windows)), span)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return b.Flush()
}

// age is how long before now t was, rounded to a tenth of a second; "never" for zero.
func age(now, t time.Time) string {
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

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func countList(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+strconv.FormatInt(m[k], 10))
	}
	return strings.Join(parts, " ")
}
