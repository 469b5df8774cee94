package resize

import (
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

func TestPressureOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		o    PressureOptions
		want bool
	}{
		"defaults":              {PressureOptions{DefaultPressureThreshold, DefaultPressureSustain}, true},
		"the floor":             {PressureOptions{0.01, time.Second}, true},
		"below the agent floor": {PressureOptions{0.005, 30 * time.Second}, false},
		"above 100%":            {PressureOptions{1.5, 30 * time.Second}, false},
		"sub-second sustain":    {PressureOptions{0.1, 500 * time.Millisecond}, false},
	}
	for name, tc := range cases {
		if err := tc.o.Validate(); (err == nil) != tc.want {
			t.Errorf("%s: Validate() = %v, want ok %v", name, err, tc.want)
		}
	}
}

func TestOOMDetail(t *testing.T) {
	cases := map[string]struct {
		ev   series.OOMEvent
		want string
	}{
		"files only":         {series.OOMEvent{Kind: "unknown"}, ""},
		"eBPF, container":    {series.OOMEvent{Kind: "container", PID: 4242, Comm: "stress", RSSBytes: 1 << 20}, "victim pid 4242 (stress), rss 1048576 bytes, container limit hit; "},
		"eBPF, kind unknown": {series.OOMEvent{Kind: "unknown", PID: 7}, "victim pid 7; "},
	}
	for name, tc := range cases {
		if got := oomDetail(tc.ev); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
