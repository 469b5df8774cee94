package v1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultPolicySpec(t *testing.T) {
	full := func(mod func(*ResourcePolicySpec)) ResourcePolicySpec {
		s := ResourcePolicySpec{
			Readiness: Readiness{MinDataPoints: 500, MinTimeSpan: "24h", MaxCV: "1.5",
				CVMeanFloor: map[string]string{"cpu": "25m", "memory": "25Mi", "ephemeral-storage": "2Mi"}},
			Behaviors: Behaviors{
				Thresholds: Thresholds{Default: "10%"},
				Resize:     ResizeBehavior{MaxChangePerCycle: "50%", Interval: "15m"},
				HPA:        HPAPreserve,
			},
		}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	cases := map[string]struct {
		in, want ResourcePolicySpec
	}{
		"empty spec gets every resolve default": {
			in:   ResourcePolicySpec{},
			want: full(nil),
		},
		"explicit empty cvMeanFloor disables floors and stays empty": {
			in:   ResourcePolicySpec{Readiness: Readiness{CVMeanFloor: map[string]string{}}},
			want: full(func(s *ResourcePolicySpec) { s.Readiness.CVMeanFloor = map[string]string{} }),
		},
		"partial cvMeanFloor is not merged with the defaults": {
			in:   ResourcePolicySpec{Readiness: Readiness{CVMeanFloor: map[string]string{"cpu": "0"}}},
			want: full(func(s *ResourcePolicySpec) { s.Readiness.CVMeanFloor = map[string]string{"cpu": "0"} }),
		},
		"author values are kept": {
			in: ResourcePolicySpec{
				Priority:  7,
				Metrics:   []MetricSpec{{Resource: "cpu", Field: "request", Source: "s", Aggregation: "avg"}},
				Readiness: Readiness{MinDataPoints: 5, MinTimeSpan: "1m", MaxCV: "2.0"},
				Behaviors: Behaviors{
					Thresholds: Thresholds{Default: "15%", Resize: ResizeThresholds{Default: "20"}},
					Resize:     ResizeBehavior{MaxChangePerCycle: "25%", Interval: "30s"},
				},
			},
			want: full(func(s *ResourcePolicySpec) {
				s.Priority = 7
				s.Metrics = []MetricSpec{{Resource: "cpu", Field: "request", Source: "s", Aggregation: "avg"}}
				s.Readiness.MinDataPoints, s.Readiness.MinTimeSpan, s.Readiness.MaxCV = 5, "1m", "2.0"
				s.Behaviors.Thresholds = Thresholds{Default: "15%", Resize: ResizeThresholds{Default: "20"}}
				s.Behaviors.Resize = ResizeBehavior{MaxChangePerCycle: "25%", Interval: "30s"}
			}),
		},
		"headroom is a compute default and stays blank": {
			in: ResourcePolicySpec{Metrics: []MetricSpec{{Resource: "memory", Field: "limit", Source: "s", Aggregation: "p99"}}},
			want: full(func(s *ResourcePolicySpec) {
				s.Metrics = []MetricSpec{{Resource: "memory", Field: "limit", Source: "s", Aggregation: "p99"}}
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := *tc.in.DeepCopy()
			got := DefaultPolicySpec(tc.in)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("DefaultPolicySpec (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, tc.in); d != "" {
				t.Errorf("input was modified (-before +after):\n%s", d)
			}
		})
	}
}

func TestDefaultPolicySpecDoesNotAlias(t *testing.T) {
	in := ResourcePolicySpec{Readiness: Readiness{CVMeanFloor: map[string]string{"cpu": "10m"}}}
	out := DefaultPolicySpec(in)
	out.Readiness.CVMeanFloor["cpu"] = "99m"
	if in.Readiness.CVMeanFloor["cpu"] != "10m" {
		t.Fatal("DefaultPolicySpec returned a map shared with its input")
	}
}

func TestRetentionWindowAndOrphanTTL(t *testing.T) {
	cases := map[string]struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		"valid":       {"72h", 72 * time.Hour, true},
		"blank":       {"", DefaultRetentionWindow, true},
		"unparseable": {"a week", DefaultRetentionWindow, false},
		"zero":        {"0s", DefaultRetentionWindow, false},
		"negative":    {"-1h", DefaultRetentionWindow, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := RetentionWindow(BallastConfigSpec{RetentionWindow: tc.in})
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("RetentionWindow(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if _, ok := OrphanTTL(BallastConfigSpec{OrphanTTL: "soon"}); ok {
		t.Error("OrphanTTL accepted an unparseable value")
	}
	if d, ok := OrphanTTL(BallastConfigSpec{OrphanTTL: "2h"}); !ok || d != 2*time.Hour {
		t.Errorf("OrphanTTL(2h) = %v, %v", d, ok)
	}
}
