package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHeadline(t *testing.T) {
	// Before the first deployment nothing is requested: the headline starts at the peak.
	pts := []Point{{}, {CPURequests: 12.4, MemRequests: 12}, {CPURequests: 4.1, MemRequests: 3.1}}
	if got, want := Headline(pts), "cpu requests 12.4 → 4.1 cores (−67 %), memory requests 12.0 → 3.1 GiB (−74 %)"; got != want {
		t.Errorf("Headline = %q, want %q", got, want)
	}
}

func TestNiceStep(t *testing.T) {
	for span, want := range map[float64]float64{12.4: 5, 10: 2, 3.3: 1, 0.9: 0.2, 340: 100, 1: 0.2} {
		if got := niceStep(span, 5); got != want {
			t.Errorf("niceStep(%g, 5) = %g, want %g", span, got, want)
		}
	}
}

func TestWriteChartHasAxesFromZero(t *testing.T) {
	var pts []Point
	for i := 0; i <= 120; i += 2 {
		p := Point{At: time.Duration(i) * time.Second, CPUCapacity: 16, CPURequests: 12.4, CPUUsed: 3, MemCapacity: 32, MemRequests: 12, MemUsed: 3}
		if i >= 60 {
			p.CPURequests, p.MemRequests = 4.1, 3.1
		}
		if i == 60 {
			p.Event = "apply <mode>"
		}
		pts = append(pts, p)
	}
	path := filepath.Join(t.TempDir(), "c.svg")
	if err := WriteChart(path, pts); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	svg := string(b)
	for _, want := range []string{">0<", ">0s<", ">60s<", ">120s<", ">cores<", ">GiB<", "1  apply &lt;mode&gt; (at 60s)", "(−67 %)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}
