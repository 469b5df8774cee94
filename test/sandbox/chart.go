package sandbox

import (
	"fmt"
	"math"
	"os"
	"strings"
)

// Headline says what Ballast saved, from the peak of the requests (the workloads as
// their authors sized them, before Ballast applied) to the last recorded point:
// "cpu requests 12.4 → 4.1 cores (−67 %), memory requests 12.0 → 3.1 GiB (−74 %)".
func Headline(pts []Point) string {
	if len(pts) == 0 {
		return "no data recorded"
	}
	var cpu, mem float64
	for _, p := range pts {
		cpu, mem = max(cpu, p.CPURequests), max(mem, p.MemRequests)
	}
	last := pts[len(pts)-1]
	return change("cpu requests", cpu, last.CPURequests, "cores") + ", " +
		change("memory requests", mem, last.MemRequests, "GiB")
}

func change(what string, from, to float64, unit string) string {
	s := fmt.Sprintf("%s %.1f → %.1f %s", what, from, to, unit)
	if from > 0 {
		pct := math.Round((to - from) / from * 100)
		sign := "+"
		if pct < 0 {
			sign = "−"
		}
		s += fmt.Sprintf(" (%s%.0f %%)", sign, math.Abs(pct))
	}
	return s
}

// niceStep is a 1, 2 or 5 × 10^k step that divides span into at most n intervals.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// tickLabel renders v with as few decimals as the step needs.
func tickLabel(v, step float64) string {
	switch {
	case step >= 1:
		return fmt.Sprintf("%.0f", v)
	case step >= 0.1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// WriteChart draws the demo's picture as SVG: for cpu and memory, allocatable capacity,
// the sum of requests and real usage over time, with y axes from zero at round ticks, a
// labelled time axis, the scenario's steps numbered (listed below the panels), and the
// headline saving on top.
func WriteChart(path string, pts []Point) error {
	const w, h, pad, gap = 960, 300, 70, 50
	var steps []Point
	for _, p := range pts {
		if p.Event != "" {
			steps = append(steps, p)
		}
	}
	height := 60 + 2*h + gap + 30 + 16*len(steps)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`, w, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16" font-weight="bold">Ballast sandbox: requests fall to real usage once Ballast applies</text>`, pad)
	fmt.Fprintf(&b, `<text x="%d" y="42" font-size="14" fill="#d9534f">%s</text>`, pad, Headline(pts))
	panel := func(top int, title, unit string, get func(Point) (capacity, req, used float64)) {
		if len(pts) == 0 {
			return
		}
		maxY, maxT := 0.0, pts[len(pts)-1].At.Seconds()
		for _, p := range pts {
			c, r, u := get(p)
			maxY = max(maxY, c, r, u)
		}
		ystep := niceStep(maxY*1.05, 5)
		maxY = math.Ceil(maxY*1.05/ystep) * ystep
		maxT = max(maxT, 1)
		xstep := niceStep(maxT, 10)
		plotTop, plotBottom := float64(top+30), float64(top+h-30)
		x := func(t float64) float64 { return pad + t/maxT*(w-2*pad) }
		y := func(v float64) float64 { return plotBottom - v/maxY*(plotBottom-plotTop) }
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s (%s)</text>`, pad, top+14, title, unit)
		// y axis: gridlines and labels at round values, from 0.
		for v := 0.0; v <= maxY+ystep/2; v += ystep {
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`, pad, y(v), w-pad, y(v))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`, pad-6, y(v)+4, tickLabel(v, ystep))
		}
		fmt.Fprintf(&b, `<text x="16" y="%.1f" fill="#555" transform="rotate(-90 16 %.1f)" text-anchor="middle">%s</text>`,
			(plotTop+plotBottom)/2, (plotTop+plotBottom)/2, unit)
		// x axis: ticks and labels in seconds since the start.
		for t := 0.0; t <= maxT+xstep/2; t += xstep {
			if t > maxT {
				break
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, x(t), plotBottom, x(t), plotBottom+4)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%.0fs</text>`, x(t), plotBottom+16, t)
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>`, pad, plotBottom, w-pad, plotBottom)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>`, pad, plotBottom, pad, plotTop)
		// Scenario steps: a dashed line with its number (listed under the panels).
		for i, p := range steps {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbb" stroke-dasharray="4 3"/>`, x(p.At.Seconds()), plotBottom, x(p.At.Seconds()), plotTop)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#444" font-size="11" font-weight="bold">%d</text>`, x(p.At.Seconds())+3, plotTop+12+float64(i%2)*12, i+1)
		}
		// Usage first, then requests dashed on top, so neither hides the other.
		lines := []struct {
			name, color, dash string
			pick              func(c, r, u float64) float64
		}{
			{"allocatable", "#444", "", func(c, _, _ float64) float64 { return c }},
			{"usage", "#2a7ab9", "", func(_, _, u float64) float64 { return u }},
			{"requests", "#d9534f", "8 4", func(_, r, _ float64) float64 { return r }},
		}
		for i, l := range lines {
			var path strings.Builder
			for j, p := range pts {
				c, r, u := get(p)
				cmd := "L"
				if j == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x(p.At.Seconds()), y(l.pick(c, r, u)))
			}
			fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2.5" stroke-dasharray="%s"/>`, path.String(), l.color, l.dash)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="3" fill="%s"/><text x="%d" y="%d">%s</text>`,
				w-pad-270+i*95, top+10, l.color, w-pad-252+i*95, top+15, l.name)
		}
	}
	panel(50, "CPU", "cores", func(p Point) (float64, float64, float64) { return p.CPUCapacity, p.CPURequests, p.CPUUsed })
	panel(50+h+gap, "Memory", "GiB", func(p Point) (float64, float64, float64) { return p.MemCapacity, p.MemRequests, p.MemUsed })
	for i, p := range steps {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#444" font-size="11">%d  %s (at %.0fs)</text>`,
			pad, 50+2*h+gap+20+16*i, i+1, xmlEscape(p.Event), p.At.Seconds())
	}
	b.WriteString(`</svg>`)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
