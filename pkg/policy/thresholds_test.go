package policy

import (
	"testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestResizeThreshold(t *testing.T) {
	full := ballastv1.Thresholds{
		Default: "20%",
		Resize: ballastv1.ResizeThresholds{
			Default: "15",
			ResourceThresholds: map[string]ballastv1.FieldThresholds{
				"memory": {Request: "5%", Limit: ""},
				"cpu":    {Limit: "7.5%"},
			},
		},
	}
	cases := map[string]struct {
		thresholds      ballastv1.Thresholds
		resource, field string
		want            string
	}{
		"the per-resource field threshold comes first":    {full, "memory", FieldRequest, "5"},
		"a blank per-field value falls to resize.default": {full, "memory", FieldLimit, "15"},
		"a fractional threshold is kept exactly":          {full, "cpu", FieldLimit, "7.5"},
		"a field without value falls through":             {full, "cpu", FieldRequest, "15"},
		"a resource without entry uses resize.default":    {full, "ephemeral-storage", FieldRequest, "15"},
		"without resize thresholds the global default": {
			ballastv1.Thresholds{Default: "20%"}, "cpu", FieldRequest, "20",
		},
		"with nothing written, the resolve-time 10%": {ballastv1.Thresholds{}, "cpu", FieldLimit, "10"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := ballastv1.ResourcePolicySpec{Behaviors: ballastv1.Behaviors{Thresholds: tc.thresholds}}
			c, err := Compile(ballastv1.KindClusterResourcePolicy, "", "p", 1, spec, Floors{})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ResizeThreshold(tc.resource, tc.field); got.String() != tc.want {
				t.Errorf("ResizeThreshold(%s, %s) = %s, want %s", tc.resource, tc.field, got, tc.want)
			}
		})
	}
	// The zero Resize (no policy compiled) ends the chain at 10% too.
	if got := (Resize{}).Threshold("memory", FieldLimit); got.CmpInt64(10) != 0 {
		t.Errorf("zero Resize threshold = %s, want 10", got)
	}
}

// TestZeroThresholdIsInvalid pins the end of the old disagreement: a threshold of 0% is
// invalid (SPEC §3.3), so no compiled policy carries one into the chain.
func TestZeroThresholdIsInvalid(t *testing.T) {
	for name, th := range map[string]ballastv1.Thresholds{
		"default":        {Default: "0%"},
		"resize.default": {Resize: ballastv1.ResizeThresholds{Default: "0"}},
		"per field": {Resize: ballastv1.ResizeThresholds{
			ResourceThresholds: map[string]ballastv1.FieldThresholds{"cpu": {Request: "0%"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			spec := ballastv1.ResourcePolicySpec{Behaviors: ballastv1.Behaviors{Thresholds: th}}
			if ok, reason, msg := Validate(ballastv1.KindClusterResourcePolicy, spec, Floors{}); ok || reason != ReasonInvalidPercentage {
				t.Errorf("Validate = %v, %s (%s); want InvalidPercentage", ok, reason, msg)
			}
		})
	}
}
