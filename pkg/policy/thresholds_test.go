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
				"cpu":    {Request: "0%", Limit: "7.5%"}, // 0% is not usable (only an invalid policy has it)
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
		"an unusable value falls through":                 {full, "cpu", FieldRequest, "15"},
		"a resource without entry uses resize.default":    {full, "ephemeral-storage", FieldRequest, "15"},
		"without resize thresholds the global default": {
			ballastv1.Thresholds{Default: "20%"}, "cpu", FieldRequest, "20",
		},
		"with nothing set, 10%": {ballastv1.Thresholds{}, "cpu", FieldLimit, "10"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := ballastv1.ResourcePolicySpec{Behaviors: ballastv1.Behaviors{Thresholds: tc.thresholds}}
			if got := ResizeThreshold(spec, tc.resource, tc.field); got.String() != tc.want {
				t.Errorf("ResizeThreshold(%s, %s) = %s, want %s", tc.resource, tc.field, got, tc.want)
			}
		})
	}
	// A compiled policy reads the same chain over its defaulted spec (10% from defaults).
	c, err := Compile(ballastv1.KindClusterResourcePolicy, "", "p", 1, ballastv1.ResourcePolicySpec{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ResizeThreshold("memory", FieldLimit); got.CmpInt64(10) != 0 {
		t.Errorf("compiled default threshold = %s, want 10", got)
	}
}
