package ballast

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ballastk8s/ballast/pkg/savings"
)

// TestReportHTMLSelfContained: the page escapes profile names, cuts long ones in the chart
// (the tooltip keeps the whole name), draws the largest value at the full bar width, and
// loads nothing from anywhere.
func TestReportHTMLSelfContained(t *testing.T) {
	long := strings.Repeat("a", 60) + "--server--default-a9696153"
	doc := &reportDoc{PricesFrom: "none", Report: savings.Report{Profiles: []savings.ProfileRow{
		{Name: `<script>alert(1)</script>`, State: "Sufficient", Figures: savings.Figures{Pods: 1,
			Requested: savings.Amount{MilliCPU: 1000, MemoryBytes: 1 << 30}, Recommended: savings.Amount{MilliCPU: 250, MemoryBytes: 1 << 28}}},
		{Name: long, State: "Accruing", Figures: savings.Figures{Pods: 2,
			Requested: savings.Amount{MilliCPU: 500, MemoryBytes: 1 << 29}, Recommended: savings.Amount{MilliCPU: 500, MemoryBytes: 1 << 29}}},
	}}}
	var out bytes.Buffer
	if err := printReportHTML(&out, doc); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	if strings.Contains(page, "<script") {
		t.Error("a profile name is not escaped")
	}
	for _, banned := range []string{"<link", "src=", "@import", "https://"} {
		if strings.Contains(page, banned) {
			t.Errorf("the page contains %q", banned)
		}
	}
	if !strings.Contains(page, ">"+long[:chartLabelRunes-1]+"…</text>") || !strings.Contains(page, "<title>"+long+" requested 500m</title>") {
		t.Error("the long name is not cut in the label and whole in the tooltip")
	}
	if !strings.Contains(page, `width="420" height="7"><title>&lt;script&gt;alert(1)&lt;/script&gt; requested 1</title>`) {
		t.Error("the largest bar does not span the chart")
	}
}

func TestPriceFlag(t *testing.T) {
	var v float64
	f := &priceValue{&v}
	for _, bad := range []string{"-0.5", "NaN", "+Inf", "cheap", ""} {
		if err := f.Set(bad); err == nil {
			t.Errorf("--price %q accepted", bad)
		}
	}
	if err := f.Set("0.031"); err != nil || v != 0.031 {
		t.Errorf("0.031: %v, %v", v, err)
	}
}
