package ballast

import (
	"cmp"
	"html/template"
	"io"
	"slices"
	"strconv"

	"github.com/ballastk8s/ballast/pkg/savings"
)

// chartProfiles is how many profiles a chart shows: the ones with the most reclaimable
// capacity of its resource (the table below the charts lists every profile).
const chartProfiles = 30

// Geometry of a chart (SVG user units).
const (
	chartLabelWidth = 300
	chartBarsWidth  = 420
	chartRowHeight  = 30
	chartBarHeight  = 7
	chartTop        = 28
)

type svgBar struct {
	Y, Width int
	Class    string
	Title    string
}

type svgRow struct {
	Label string
	Y     int // baseline of the label
	Bars  []svgBar
}

type svgChart struct {
	Title         string
	Width, Height int
	BarsX         int
	Rows          []svgRow
	Scale         string // the value at the right edge
	Omitted       int
}

// chart draws requested, recommended and p95 usage per profile for one resource.
func chart(title string, rows []savings.ProfileRow, value func(savings.Amount) int64, format func(int64) string) svgChart {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b savings.ProfileRow) int {
		return cmp.Or(cmp.Compare(value(b.Reclaimable), value(a.Reclaimable)), cmp.Compare(a.Name, b.Name))
	})
	c := svgChart{Title: title, BarsX: chartLabelWidth}
	if len(rows) > chartProfiles {
		c.Omitted = len(rows) - chartProfiles
		rows = rows[:chartProfiles]
	}
	var top int64 = 1
	for _, r := range rows {
		top = max(top, value(r.Requested), value(r.Recommended), value(r.UsedP95))
	}
	c.Scale = format(top)
	for i, r := range rows {
		y := chartTop + i*chartRowHeight
		row := svgRow{Label: chartLabel(r.Name), Y: y + 2*chartBarHeight}
		bar := func(k int, v int64, class, what string) {
			row.Bars = append(row.Bars, svgBar{Y: y + k*(chartBarHeight+1), Width: int(v * chartBarsWidth / top), Class: class,
				Title: r.Name + " " + what + " " + format(v)})
		}
		bar(0, value(r.Requested), "req", "requested")
		bar(1, value(r.Recommended), "rec", "recommended")
		if r.Measured {
			bar(2, value(r.UsedP95), "use", "used p95")
		}
		c.Rows = append(c.Rows, row)
	}
	c.Width = chartLabelWidth + chartBarsWidth + 90
	c.Height = chartTop + len(rows)*chartRowHeight + 10
	return c
}

// chartLabelRunes is the longest profile name a chart prints whole (about 290 units at 11px);
// longer names are cut, and the bars' tooltips carry the whole name.
const chartLabelRunes = 46

func chartLabel(name string) string {
	if r := []rune(name); len(r) > chartLabelRunes {
		return string(r[:chartLabelRunes-1]) + "…"
	}
	return name
}

var reportPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Ballast savings report</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: 2px 10px; text-align: right; border-bottom: 1px solid #ddd; }
th:first-child, td:first-child { text-align: left; }
tr.total td { font-weight: bold; }
.req { fill: #9e9e9e; } .rec { fill: #1f77b4; } .use { fill: #ff7f0e; }
svg text { font: 11px system-ui, sans-serif; fill: #222; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: middle; }
</style>
</head>
<body>
<h1>Ballast savings report</h1>
<p>Prices: {{.Prices}}</p>
<p><b>Reclaimable:</b> {{.Total.CPU}} cpu, {{.Total.Memory}} memory over {{.Total.Pods}} pods{{if .Total.Savings}}, <b>{{.Total.Savings}} per month</b>{{end}}.</p>
<p class="legend"><span style="background:#9e9e9e"></span>requested<span style="background:#1f77b4"></span>recommended<span style="background:#ff7f0e"></span>used (p95)</p>
{{range .Charts}}{{$x := .BarsX}}<h2>{{.Title}}</h2>
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="{{.Title}}">
<text x="{{.BarsX}}" y="14">0</text><text x="{{.BarsX}}" y="14" dx="420" text-anchor="end">{{.Scale}}</text>
{{range .Rows}}<text x="{{$x}}" dx="-8" y="{{.Y}}" text-anchor="end">{{.Label}}</text>
{{range .Bars}}<rect class="{{.Class}}" x="{{$x}}" y="{{.Y}}" width="{{.Width}}" height="7"><title>{{.Title}}</title></rect>
{{end}}{{end}}</svg>
{{if .Omitted}}<p>{{.Omitted}} more profiles with less reclaimable capacity are in the table.</p>{{end}}
{{end}}<h2>Profiles</h2>
<table>
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Profiles}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}<tr class="total">{{range .TotalRow}}<td>{{.}}</td>{{end}}</tr>
</table>
<h2>Namespaces</h2>
<table>
<tr>{{range .NSHead}}<th>{{.}}</th>{{end}}</tr>
{{range .Namespaces}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{range .Notes}}<p>Note: {{.}}</p>
{{end}}</body>
</html>
`))

// printReportHTML writes a self-contained page: the totals, one inline SVG chart per
// resource and the tables. No scripts, styles or fonts are loaded from anywhere.
func printReportHTML(w io.Writer, doc *reportDoc) error {
	type total struct {
		CPU, Memory, Savings string
		Pods                 int
	}
	page := struct {
		Prices     string
		Total      total
		Charts     []svgChart
		Head       []string
		Profiles   [][]string
		TotalRow   []string
		NSHead     []string
		Namespaces [][]string
		Notes      []string
	}{
		Prices: pricesLine(doc),
		Total:  total{CPU: cpuAmount(doc.Total.Reclaimable.MilliCPU), Memory: memAmount(doc.Total.Reclaimable.MemoryBytes), Pods: doc.Total.Pods},
		Charts: []svgChart{
			chart("CPU: requested vs recommended vs used", doc.Profiles, func(a savings.Amount) int64 { return a.MilliCPU }, cpuAmount),
			chart("Memory: requested vs recommended vs used", doc.Profiles, func(a savings.Amount) int64 { return a.MemoryBytes }, memAmount),
		},
		Head:     append([]string{"Profile", "State", "Pods"}, figureHead(doc)...),
		TotalRow: append([]string{"Total", "", strconv.Itoa(doc.Total.Pods)}, figureCells(doc.Total)...),
		NSHead:   append([]string{"Namespace", "Profiles", "Pods"}, figureHead(doc)...),
		Notes:    doc.Notes,
	}
	if doc.Total.Cost != nil {
		page.Total.Savings = money(doc, doc.Total.Cost.Savings)
	}
	for _, r := range doc.Profiles {
		page.Profiles = append(page.Profiles, append([]string{r.Name, r.State, strconv.Itoa(r.Pods)}, figureCells(r.Figures)...))
	}
	for _, r := range doc.Namespaces {
		page.Namespaces = append(page.Namespaces, append([]string{r.Namespace, strconv.Itoa(r.Profiles), strconv.Itoa(r.Pods)}, figureCells(r.Figures)...))
	}
	return reportPage.Execute(w, page)
}
