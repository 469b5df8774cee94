package policy

import (
	"strings"
	"testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// presetSpec is the chart's default ClusterResourcePolicy (SPEC §5.2).
func presetSpec() ballastv1.ResourcePolicySpec {
	return ballastv1.ResourcePolicySpec{
		Metrics: []ballastv1.MetricSpec{
			{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
			{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75", Headroom: "1.0"},
			{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
			{Resource: "ephemeral-storage", Field: "request", Source: "kubelet-summary", Aggregation: "p90", Headroom: "1.0"},
			{Resource: "ephemeral-storage", Field: "limit", Source: "kubelet-summary", Aggregation: "p99", Headroom: "1.2"},
		},
		Readiness: ballastv1.Readiness{
			MinDataPoints: 250, MinTimeSpan: "24h", MaxCV: "1.5",
			CVMeanFloor: map[string]string{"cpu": "25m", "memory": "25Mi", "ephemeral-storage": "2Mi"},
		},
		Behaviors: ballastv1.Behaviors{
			Thresholds: ballastv1.Thresholds{Default: "10%"},
			Resize:     ballastv1.ResizeBehavior{MaxChangePerCycle: "50%", Interval: "15m"},
		},
	}
}

// withSpec returns the preset changed by edit.
func withSpec(edit func(s *ballastv1.ResourcePolicySpec)) ballastv1.ResourcePolicySpec {
	s := presetSpec()
	edit(&s)
	return s
}

type validation struct {
	OK      bool
	Reason  string
	Message string
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		spec ballastv1.ResourcePolicySpec
		want validation
	}{
		"the chart preset is valid": {
			spec: presetSpec(),
			want: validation{true, ReasonValid, ""},
		},
		"an empty spec is valid: every blank takes its default": {
			spec: ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{
				{Resource: "cpu", Field: "request", Source: "s", Aggregation: "p90"},
			}},
			want: validation{true, ReasonValid, ""},
		},
		"an explicit empty cvMeanFloor is valid": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Readiness.CVMeanFloor = map[string]string{} }),
			want: validation{true, ReasonValid, ""},
		},
		"a namespace regex that does not compile": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) {
				s.Selector.Namespaces.Include = []string{"prod", "/team-(a/"}
			}),
			want: validation{false, ReasonInvalidPattern,
				"selector.namespaces.include[1] \"/team-(a/\": not a valid RE2 regex: error parsing regexp: missing closing ): `team-(a`"},
		},
		"a label selector with an unknown operator": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) {
				s.Selector.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: "Near", Values: []string{"web"}},
				}}
			}),
			want: validation{false, ReasonInvalidLabelSelector,
				`selector.labelSelector: "Near" is not a valid label selector operator`},
		},
		"a metric on a resource Ballast does not size": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Metrics[1].Resource = "nvidia.com/gpu" }),
			want: validation{false, ReasonInvalidResource,
				`metrics[1].resource "nvidia.com/gpu": must be one of cpu, memory, ephemeral-storage`},
		},
		"an aggregation stored before the schema enum existed": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Metrics[3].Aggregation = "p42" }),
			want: validation{false, ReasonInvalidAggregation,
				`metrics[3].aggregation "p42": must be one of p50, p75, p90, p95, p99, max, avg`},
		},
		"a field outside request and limit": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Metrics[0].Field = "both" }),
			want: validation{false, ReasonInvalidAggregation, `metrics[0].field "both": must be request or limit`},
		},
		"a zero headroom": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Metrics[2].Headroom = "0" }),
			want: validation{false, ReasonInvalidHeadroom, `metrics[2].headroom "0": must be a decimal > 0`},
		},
		"a headroom of 1000 (issue 12) is above the ceiling": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Metrics[2].Headroom = "1000" }),
			want: validation{false, ReasonInvalidHeadroom, `metrics[2].headroom "1000": must be ≤ 10`},
		},
		"a headroom of exactly 10 is valid": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Metrics[2].Headroom = "10" }),
			want: validation{true, ReasonValid, ""},
		},
		"a maxAllowed resource Ballast does not recommend": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.MaxAllowed = map[string]string{"gpu": "1"} }),
			want: validation{false, ReasonInvalidBounds, `maxAllowed["gpu"]: must be one of cpu, memory, ephemeral-storage`},
		},
		"a maxAllowed that is not a quantity": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.MaxAllowed = map[string]string{"memory": "lots"} }),
			want: validation{false, ReasonInvalidBounds, `maxAllowed["memory"] "lots": must be a quantity ≥ 0`},
		},
		"a minAllowed above maxAllowed": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) {
				s.MinAllowed = map[string]string{"cpu": "2"}
				s.MaxAllowed = map[string]string{"cpu": "1500m"}
			}),
			want: validation{false, ReasonInvalidBounds, `minAllowed["cpu"] "2": must be ≤ maxAllowed["cpu"] "1500m"`},
		},
		"minAllowed and maxAllowed in order": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) {
				s.MinAllowed = map[string]string{"cpu": "10m", "memory": "32Mi"}
				s.MaxAllowed = map[string]string{"cpu": "4", "memory": "16Gi"}
			}),
			want: validation{true, ReasonValid, ""},
		},
		"a negative cvMeanFloor": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Readiness.CVMeanFloor["memory"] = "-1Mi" }),
			want: validation{false, ReasonInvalidQuantity, `readiness.cvMeanFloor["memory"] "-1Mi": must be a quantity ≥ 0`},
		},
		"a minTimeSpan without a unit": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Readiness.MinTimeSpan = "24" }),
			want: validation{false, ReasonInvalidDuration, `readiness.minTimeSpan "24": must be a Go duration > 0`},
		},
		"a zero resize interval": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Behaviors.Resize.Interval = "0s" }),
			want: validation{false, ReasonInvalidDuration, `behaviors.resize.interval "0s": must be a Go duration > 0`},
		},
		"a per-resource limit threshold of zero": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) {
				s.Behaviors.Thresholds.Resize.ResourceThresholds = map[string]ballastv1.FieldThresholds{
					"memory": {Request: "5%", Limit: "0%"},
				}
			}),
			want: validation{false, ReasonInvalidPercentage,
				`behaviors.thresholds.resize.resourceThresholds["memory"].limit "0%": must be a percentage > 0`},
		},
		"a maxChangePerCycle above 100%": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Behaviors.Resize.MaxChangePerCycle = "150%" }),
			want: validation{false, ReasonInvalidPercentage,
				`behaviors.resize.maxChangePerCycle "150%": must be a percentage > 0 and ≤ 100`},
		},
		"a negative maxCV": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Readiness.MaxCV = "-0.5" }),
			want: validation{false, ReasonInvalidNumber, `readiness.maxCV "-0.5": must be a decimal ≥ 0`},
		},
		"the first reason in SPEC order wins over later ones": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) {
				s.Readiness.MaxCV = "lots"
				s.Metrics[0].Headroom = "-1"
				s.Metrics[4].Resource = "gpu"
				s.Selector.Annotations = map[string]string{"team": "/[/"}
			}),
			want: validation{false, ReasonInvalidPattern,
				"selector.annotations[\"team\"] \"/[/\": not a valid RE2 regex: error parsing regexp: missing closing ]: `[`"},
		},
		"within a reason, metrics are checked in order": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) {
				s.Metrics[4].Headroom = "x"
				s.Metrics[1].Headroom = "0.0"
			}),
			want: validation{false, ReasonInvalidHeadroom, `metrics[1].headroom "0.0": must be a decimal > 0`},
		},
		"a headroom longer than the decimal limit is invalid, as the computation would reject it": {
			spec: withSpec(func(s *ballastv1.ResourcePolicySpec) {
				s.Metrics[0].Headroom = "1." + strings.Repeat("0", MaxDecimalLen)
			}),
			want: validation{false, ReasonInvalidHeadroom, `metrics[0].headroom "1.` + strings.Repeat("0", MaxDecimalLen) + `": must be a decimal > 0`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got validation
			got.OK, got.Reason, got.Message = Validate(ballastv1.KindClusterResourcePolicy, tc.spec, Floors{})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}
