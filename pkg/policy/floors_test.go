package policy

import (
	"testing"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/google/go-cmp/cmp"
)

// TestFloors: a ResourcePolicy is held to the cluster's floors, a ClusterResourcePolicy
// only to the absolute ones; the message names the field, the value and the floor.
func TestFloors(t *testing.T) {
	rp, crp := ballastv1.KindResourcePolicy, ballastv1.KindClusterResourcePolicy
	interval := func(v string) ballastv1.ResourcePolicySpec {
		return withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Behaviors.Resize.Interval = v })
	}
	span := func(v string) ballastv1.ResourcePolicySpec {
		return withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Readiness.MinTimeSpan = v })
	}
	memThreshold := func(v string) ballastv1.ResourcePolicySpec {
		return withSpec(func(s *ballastv1.ResourcePolicySpec) {
			s.Behaviors.Thresholds.Resize.ResourceThresholds = map[string]ballastv1.FieldThresholds{"memory": {Limit: v}}
		})
	}
	valid := validation{true, ReasonValid, ""}
	cases := map[string]struct {
		kind   string
		spec   ballastv1.ResourcePolicySpec
		floors Floors
		want   validation
	}{
		"a 1ns interval in a ResourcePolicy is below the cluster floor": {rp, interval("1ns"), DefaultFloors,
			validation{false, ReasonInvalidDuration, `behaviors.resize.interval "1ns": below the cluster floor 1m (BallastConfig spec.policyFloors.minResizeInterval)`}},
		"the floor itself is allowed":                                         {rp, interval("60s"), DefaultFloors, valid},
		"a 30s interval in a ClusterResourcePolicy keeps the admin's freedom": {crp, interval("30s"), DefaultFloors, valid},
		"a 1ns interval in a ClusterResourcePolicy is below the absolute floor": {crp, interval("1ns"), DefaultFloors,
			validation{false, ReasonInvalidDuration, `behaviors.resize.interval "1ns": below the absolute floor 1s`}},
		"a cluster floor under the absolute floor leaves the absolute floor": {rp, interval("500ms"), Floors{ResizeInterval: time.Millisecond},
			validation{false, ReasonInvalidDuration, `behaviors.resize.interval "500ms": below the absolute floor 1s`}},
		"a minTimeSpan of 20s in a ResourcePolicy": {rp, span("20s"), DefaultFloors,
			validation{false, ReasonInvalidDuration, `readiness.minTimeSpan "20s": below the cluster floor 1h (BallastConfig spec.policyFloors.minTimeSpan)`}},
		"a minTimeSpan of 20s in a ClusterResourcePolicy (the node test preset)": {crp, span("20s"), DefaultFloors, valid},
		"a lowered floor admits the fast ResourcePolicy":                         {rp, span("20s"), Floors{MinTimeSpan: 10 * time.Second}, valid},
		"a 0.5% threshold is below the cluster floor": {rp, memThreshold("0.5%"), DefaultFloors,
			validation{false, ReasonInvalidPercentage, `behaviors.thresholds.resize.resourceThresholds["memory"].limit "0.5%": below the cluster floor 1% (BallastConfig spec.policyFloors.minThreshold)`}},
		"a 0.5% threshold in a ClusterResourcePolicy": {crp, memThreshold("0.5"), DefaultFloors, valid},
		"thresholds.default is floored too": {rp, withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Behaviors.Thresholds.Default = "0.01" }),
			DefaultFloors, validation{false, ReasonInvalidPercentage, `behaviors.thresholds.default "0.01": below the cluster floor 1% (BallastConfig spec.policyFloors.minThreshold)`}},
		"an unparseable value keeps its own reason before the floor": {rp, interval("soon"), DefaultFloors,
			validation{false, ReasonInvalidDuration, `behaviors.resize.interval "soon": must be a Go duration > 0`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got validation
			got.OK, got.Reason, got.Message = Validate(tc.kind, tc.spec, tc.floors)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
			ns := ""
			if tc.kind == rp {
				ns = "team"
			}
			// Compile agrees with Validate: the shells never disagree with the Valid condition.
			_, err := Compile(tc.kind, ns, "p", 1, tc.spec, tc.floors)
			if (err == nil) != tc.want.OK {
				t.Errorf("Compile error %v, want valid=%v", err, tc.want.OK)
			}
		})
	}
}

// TestFloorsRaiseBlankDefaults: a blank value takes its default raised to an admin floor
// above it, so leaving a field out never gets under the floor.
func TestFloorsRaiseBlankDefaults(t *testing.T) {
	spec := ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{{Resource: "cpu", Field: "request", Source: "s", Aggregation: "p90"}}}
	high := Floors{ResizeInterval: 2 * time.Hour, MinTimeSpan: 48 * time.Hour, Threshold: mustPct(t, "20")}
	c, err := Compile(ballastv1.KindResourcePolicy, "team", "p", 1, spec, high)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.Resize.Interval, c.Readiness.MinTimeSpan, c.ResizeThreshold("cpu", FieldRequest).String()}
	if diff := cmp.Diff([]any{2 * time.Hour, 48 * time.Hour, "20"}, got); diff != "" {
		t.Errorf("raised defaults (-want +got):\n%s", diff)
	}
	// A ClusterResourcePolicy keeps the plain defaults.
	c, err = Compile(ballastv1.KindClusterResourcePolicy, "", "p", 1, spec, high)
	if err != nil {
		t.Fatal(err)
	}
	got = []any{c.Resize.Interval, c.Readiness.MinTimeSpan, c.ResizeThreshold("cpu", FieldRequest).String()}
	if diff := cmp.Diff([]any{15 * time.Minute, 24 * time.Hour, "10"}, got); diff != "" {
		t.Errorf("cluster defaults (-want +got):\n%s", diff)
	}
}

func TestParseFloors(t *testing.T) {
	cases := map[string]struct {
		in       ballastv1.PolicyFloors
		want     Floors
		problems int
	}{
		"blank is the defaults": {ballastv1.PolicyFloors{}, DefaultFloors, 0},
		"explicit values":       {ballastv1.PolicyFloors{MinResizeInterval: "30s", MinTimeSpan: "20s", MinThreshold: "0.5%"}, Floors{30 * time.Second, 20 * time.Second, mustPct(t, "0.5")}, 0},
		"zero is no cluster floor": {ballastv1.PolicyFloors{MinResizeInterval: "0", MinTimeSpan: "0s", MinThreshold: "0"},
			Floors{0, 0, mustPct(t, "0")}, 0},
		"unparseable values count as their defaults": {ballastv1.PolicyFloors{MinResizeInterval: "a minute", MinTimeSpan: "-1h", MinThreshold: "lots"},
			DefaultFloors, 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, problems := ParseFloors(tc.in)
			if !got.Equal(tc.want) || len(problems) != tc.problems {
				t.Errorf("ParseFloors = %+v, %q; want %+v and %d problems", got, problems, tc.want, tc.problems)
			}
		})
	}
	if f, _ := FloorsOf(nil); !f.Equal(DefaultFloors) {
		t.Errorf("FloorsOf(nil) = %+v, want the defaults", f)
	}
}

func mustPct(t *testing.T, s string) Decimal {
	t.Helper()
	d, err := ParsePercentage(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
