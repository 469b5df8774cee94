package sizing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

func compile(t *testing.T, spec v1.ResourcePolicySpec) *policy.Compiled {
	t.Helper()
	c, err := policy.Compile(v1.KindClusterResourcePolicy, "", "p", 1, spec, policy.Floors{})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return c
}

func TestParamsFor(t *testing.T) {
	c := compile(t, v1.ResourcePolicySpec{
		Metrics: []v1.MetricSpec{
			{Resource: "cpu", Field: "request", Source: "s", Aggregation: "avg"},
			{Resource: "memory", Field: "limit", Source: "s", Aggregation: "p99"},
		},
		Behaviors: v1.Behaviors{
			Thresholds: v1.Thresholds{Default: "15%", Resize: v1.ResizeThresholds{
				Default:            "20",
				ResourceThresholds: map[string]v1.FieldThresholds{"cpu": {Request: "5%"}, "memory": {Limit: "7.5"}},
			}},
			Resize: v1.ResizeBehavior{MaxChangePerCycle: "25%"},
		},
	})
	p := ParamsFor(c)
	thresholds := map[Target]string{
		{corev1.ResourceCPU, Request}:              "5",   // per resource and field
		{corev1.ResourceCPU, Limit}:                "20",  // blank ⇒ resize.default
		{corev1.ResourceMemory, Limit}:             "7.5", // decimal without %
		{corev1.ResourceMemory, Request}:           "20",  // resize.default
		{corev1.ResourceEphemeralStorage, Request}: "20",
	}
	for target, want := range thresholds {
		if got := p.Thresholds[target]; got.String() != want {
			t.Errorf("threshold %s %s = %s, want %s", target.Resource, target.Field, got, want)
		}
	}
	if got := p.MaxChangePerCycle.String(); got != "25" {
		t.Errorf("maxChangePerCycle = %s, want 25", got)
	}
	if !p.Managed.Has(corev1.ResourceCPU, Request) || p.Managed.Has(corev1.ResourceCPU, Limit) || !p.Managed.Has(corev1.ResourceMemory, Limit) {
		t.Errorf("managed = %v", p.Managed)
	}

	// A bare policy gets the resolve-time defaults: 10% everywhere, 50% per cycle.
	bare := ParamsFor(compile(t, v1.ResourcePolicySpec{}))
	if got := bare.Thresholds[Target{corev1.ResourceCPU, Request}]; got.CmpInt64(10) != 0 {
		t.Errorf("bare threshold = %s, want 10", got)
	}
	if bare.MaxChangePerCycle.CmpInt64(50) != 0 {
		t.Errorf("bare maxChangePerCycle = %s, want 50", bare.MaxChangePerCycle)
	}
	if len(bare.Managed) != 0 {
		t.Errorf("bare managed = %v, want none", bare.Managed)
	}
	// Zero values of Params fall back the same way inside the calculator.
	if (Params{}).threshold(corev1.ResourceCPU, Request).Cmp(defaultThreshold) != 0 || (Params{}).maxChange().Cmp(defaultMaxChange) != 0 {
		t.Errorf("zero Params do not fall back to 10%% / 50%%")
	}
}

// TestParamsForAllowed: the policy's minAllowed/maxAllowed become the allowed range, and
// WithBounds narrows it by the largest node without widening it.
func TestParamsForAllowed(t *testing.T) {
	c, err := policy.Compile(v1.KindClusterResourcePolicy, "", "p", 1, v1.ResourcePolicySpec{
		MinAllowed: map[string]string{"memory": "32Mi"}, MaxAllowed: map[string]string{"cpu": "8", "memory": "16Gi"}}, policy.Floors{})
	if err != nil {
		t.Fatal(err)
	}
	p := ParamsFor(c).WithBounds(nil, nil, map[corev1.ResourceName]Range{
		"cpu":    {Max: 4000, HasMax: true, MaxFrom: "largest node allocatable 4"},
		"memory": {Max: u("memory", "64Gi"), HasMax: true, MaxFrom: "largest node allocatable 64Gi"}})
	want := map[corev1.ResourceName]Range{
		"cpu": {Max: 4000, HasMax: true, MaxFrom: "largest node allocatable 4"},
		"memory": {Min: u("memory", "32Mi"), HasMin: true, MinFrom: "policy minAllowed 32Mi",
			Max: u("memory", "16Gi"), HasMax: true, MaxFrom: "policy maxAllowed 16Gi"},
	}
	if diff := cmp.Diff(want, p.Bounds.Allowed); diff != "" {
		t.Errorf("allowed (-want +got):\n%s", diff)
	}
}
