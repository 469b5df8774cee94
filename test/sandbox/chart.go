package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// WriteChart draws the demo's picture as SVG: for cpu and memory, allocatable capacity,
// the sum of requests and real usage over time, with the scenario's steps marked.
func WriteChart(path string, pts []Point) error {
	const w, h, pad, gap = 960, 300, 60, 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`, w, 2*h+gap+40)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16" font-weight="bold">Ballast sandbox: requests fall to real usage once Ballast applies</text>`, pad)
	panel := func(top int, title, unit string, get func(Point) (capacity, req, used float64)) {
		if len(pts) == 0 {
			return
		}
		maxY, maxT := 0.0, pts[len(pts)-1].At.Seconds()
		for _, p := range pts {
			c, r, u := get(p)
			maxY = max(maxY, c, r, u)
		}
		maxY *= 1.1
		maxT = max(maxT, 1)
		x := func(t float64) float64 { return pad + t/maxT*(w-2*pad) }
		y := func(v float64) float64 { return float64(top+h-pad/2) - v/maxY*float64(h-pad) }
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s (%s)</text>`, pad, top+14, title, unit)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>`, pad, y(0), w-pad, y(0))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999"/>`, pad, y(0), pad, y(maxY))
		for i := 0; i <= 4; i++ {
			v := maxY * float64(i) / 4
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%.1f</text>`, pad-6, y(v)+4, v)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%.0fs</text>`, w-pad, y(0)+16, maxT)
		events := 0
		for _, p := range pts {
			if p.Event != "" {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbb" stroke-dasharray="4 3"/>`, x(p.At.Seconds()), y(0), x(p.At.Seconds()), y(maxY))
				// Stagger the labels: steps often come seconds apart.
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#444" font-size="11">%s</text>`, x(p.At.Seconds())+3, y(maxY)+12+float64(events%4)*13, p.Event)
				events++
			}
		}
		lines := []struct {
			name, color string
			pick        func(c, r, u float64) float64
		}{
			{"allocatable", "#444", func(c, _, _ float64) float64 { return c }},
			{"requests", "#d9534f", func(_, r, _ float64) float64 { return r }},
			{"usage", "#2a7ab9", func(_, _, u float64) float64 { return u }},
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
			fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`, path.String(), l.color)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="3" fill="%s"/><text x="%d" y="%d">%s</text>`,
				w-pad-260+i*90, top+10, l.color, w-pad-244+i*90, top+15, l.name)
		}
	}
	panel(40, "CPU", "cores", func(p Point) (float64, float64, float64) { return p.CPUCapacity, p.CPURequests, p.CPUUsed })
	panel(40+h+gap, "Memory", "GiB", func(p Point) (float64, float64, float64) { return p.MemCapacity, p.MemRequests, p.MemUsed })
	b.WriteString(`</svg>`)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
