package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Markdown renders the comparison: one table (a column per system) and a text chart of
// the cluster's summed cpu requests over time.
func Markdown(rs []*Result, nodes int, seed uint64, sch Schedule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`make bench-vpa` — %d simulated nodes per sandbox, seed %d, %s per run; new namespace at %s, teardown at %s, redeploy %s later. Measured %s.\n\n",
		nodes, seed, sch.Total, sch.NewNamespaceAt, sch.TeardownAt, sch.Gap, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	b.WriteString("| measure |")
	for _, r := range rs {
		fmt.Fprintf(&b, " %s |", name(r.System))
	}
	b.WriteString("\n|---|")
	for range rs {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	row := func(label string, f func(r *Result) string) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, r := range rs {
			fmt.Fprintf(&b, " %s |", f(r))
		}
		b.WriteString("\n")
	}
	row("first pod → usable recommendation", func(r *Result) string { return dur(r.RecAt) })
	row("first usable recommendation (shop)", func(r *Result) string { return r.FirstRec.String() })
	row("first pod → every running shop pod within 10 % of it", func(r *Result) string { return dur(r.CarryAt) })
	row("new namespace: requests at first admission", func(r *Result) string { return adm(r.NewNS) })
	row("teardown + redeploy: requests at first admission", func(r *Result) string { return adm(r.Redeploy) })
	row("teardown + redeploy: redeploy → usable recommendation", func(r *Result) string { return dur(r.RedeployRecAt) })
	row("imgproc: first OOM kill (since first pod)", func(r *Result) string { return dur(r.FirstKill) })
	row("imgproc: running pod's memory limit raised", func(r *Result) string { return raise(r) })
	row("OOM kills over the run", func(r *Result) string { return fmt.Sprint(r.OOMs) })
	row("shop final request ÷ p95 true usage: cpu", func(r *Result) string { return ratio(r.CPURatio) })
	row("shop final request ÷ p95 true usage: memory", func(r *Result) string { return ratio(r.MemRatio) })
	row("waste Σ(request − usage): cpu core·s", func(r *Result) string { return fmt.Sprintf("%.0f", r.WasteCPU) })
	row("waste Σ(request − usage): memory GiB·s", func(r *Result) string { return fmt.Sprintf("%.0f", r.WasteMem) })
	row("cpu used above request (core·s; no cpu limits ⇒ 0 s throttled)", func(r *Result) string { return fmt.Sprintf("%.1f", r.CPUOverReq) })
	row("control plane cpu-seconds over the run", func(r *Result) string { return fmt.Sprintf("%.1f s", r.ControlCPU) })
	row("control plane peak RSS (summed)", func(r *Result) string { return fmt.Sprintf("%.0f MiB", r.ControlPeak) })
	row("node agents cpu-seconds / peak RSS (summed)", func(r *Result) string {
		if r.AgentPeak == 0 {
			return "none"
		}
		return fmt.Sprintf("%.1f s / %.0f MiB", r.AgentCPU, r.AgentPeak)
	})
	b.WriteString("\nControl plane: Ballast = ballast-control + Valkey; VPA = recommender + updater + admission-controller + metrics-server.\n\n")
	b.WriteString(chart(rs))
	return b.String()
}

func name(sys string) string {
	if sys == "vpa" {
		return "VPA 1.8.1"
	}
	return "Ballast"
}

func dur(d time.Duration) string {
	if d < 0 {
		return "not within the run"
	}
	return d.String()
}

func adm(a admitted) string {
	if a.at == 0 {
		return "no pod"
	}
	if !a.sized {
		return fmt.Sprintf("author's values (cpu %s, memory %s)", a.cpu, a.mem)
	}
	return fmt.Sprintf("sized: cpu %s, memory %s", a.cpu, a.mem)
}

func raise(r *Result) string {
	switch {
	case r.LimitRaised < 0:
		return "not within the run"
	case r.FirstKill < 0 || r.LimitRaised < r.FirstKill:
		return fmt.Sprintf("to %s at %s, before any kill", r.LimitAfter, r.LimitRaised)
	default:
		return fmt.Sprintf("to %s, %s after the first kill", r.LimitAfter, r.LimitRaised-r.FirstKill)
	}
}

func ratio(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

// chart is a text chart: summed cpu requests of running pods (cores) every 30 s, one bar
// per system, and the true usage.
func chart(rs []*Result) string {
	var b strings.Builder
	b.WriteString("Summed cpu requests of running pods (cores; `#` Ballast, `=` VPA, `|` true usage), every 30 s:\n\n```\n")
	const scale = 2.0 // characters per core
	for t := 0 * time.Second; ; t += 30 * time.Second {
		any := false
		for _, r := range rs {
			p, ok := at(r, t)
			if !ok {
				continue
			}
			any = true
			mark := "#"
			if r.System == "vpa" {
				mark = "="
			}
			bar := strings.Repeat(mark, int(p.CPURequests*scale+0.5))
			used := int(p.CPUUsed*scale + 0.5)
			if used < len(bar) {
				bar = bar[:used] + "|" + bar[used+1:]
			}
			fmt.Fprintf(&b, "%5s %-8s %5.1f %s\n", t.String(), name(r.System), p.CPURequests, bar)
		}
		if !any {
			break
		}
	}
	b.WriteString("```\n")
	return b.String()
}

func at(r *Result, t time.Duration) (p struct{ CPURequests, CPUUsed float64 }, ok bool) {
	for _, pt := range r.Points {
		if pt.At >= t {
			p.CPURequests, p.CPUUsed = pt.CPURequests, pt.CPUUsed
			return p, true
		}
	}
	return p, false
}

// WriteSection replaces the text between <!-- name:start --> and <!-- name:end --> in a
// markdown file (appending the markers if missing).
func WriteSection(path, name, body string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	start, end := "<!-- "+name+":start -->", "<!-- "+name+":end -->"
	s := string(b)
	i, j := strings.Index(s, start), strings.Index(s, end)
	block := start + "\n" + body + "\n" + end
	if i < 0 || j < i {
		s = strings.TrimRight(s, "\n") + "\n\n" + block + "\n"
	} else {
		s = s[:i] + block + s[j+len(end):]
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
