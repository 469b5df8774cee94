package policy

import (
	"testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestCompileRuntime(t *testing.T) {
	cases := map[string]struct {
		edit         func(s *ballastv1.ResourcePolicySpec)
		wantReason   string
		wantType     string
		wantMargin   string
		wantPodLevel string
		// wantMemHeadroom is the headroom of metrics[1] (memory request, written "1.0")
		// and metrics[2] blanked (memory limit).
		wantBlankMemHeadroom string
	}{
		"blank is generic, 5%, keep": {edit: func(s *ballastv1.ResourcePolicySpec) { s.Metrics[2].Headroom = "" },
			wantType: RuntimeGeneric, wantMargin: "5", wantPodLevel: PodLevelKeep, wantBlankMemHeadroom: "1.0"},
		"jvm raises a blank memory headroom to 1.25": {edit: func(s *ballastv1.ResourcePolicySpec) {
			s.Runtime.Type, s.Metrics[2].Headroom, s.PodLevel = "jvm", "", "size"
		}, wantType: RuntimeJVM, wantMargin: "5", wantPodLevel: PodLevelSize, wantBlankMemHeadroom: "1.25"},
		"go keeps 1.0 and reads its margin": {edit: func(s *ballastv1.ResourcePolicySpec) {
			s.Runtime.Type, s.Runtime.Margin, s.Metrics[2].Headroom = "go", "10%", ""
		}, wantType: RuntimeGo, wantMargin: "10", wantPodLevel: PodLevelKeep, wantBlankMemHeadroom: "1.0"},
		"unknown type":     {edit: func(s *ballastv1.ResourcePolicySpec) { s.Runtime.Type = "ruby" }, wantReason: ReasonInvalidRuntime},
		"bad margin":       {edit: func(s *ballastv1.ResourcePolicySpec) { s.Runtime.Margin = "150%" }, wantReason: ReasonInvalidRuntime},
		"unknown podLevel": {edit: func(s *ballastv1.ResourcePolicySpec) { s.PodLevel = "grow" }, wantReason: ReasonInvalidRuntime},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := Compile(ballastv1.KindClusterResourcePolicy, "", "p", 1, withSpec(tc.edit), Floors{})
			if tc.wantReason != "" {
				verr, ok := err.(*ValidationError)
				if !ok || verr.Reason != tc.wantReason {
					t.Fatalf("err %v, want reason %s", err, tc.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Runtime.Type != tc.wantType || c.Runtime.Margin.Rat().FloatString(0) != tc.wantMargin || c.PodLevel != tc.wantPodLevel {
				t.Errorf("runtime %q margin %s podLevel %q; want %q %s %q", c.Runtime.Type, c.Runtime.Margin, c.PodLevel,
					tc.wantType, tc.wantMargin, tc.wantPodLevel)
			}
			if got := c.Metrics[2].Headroom.Rat().FloatString(2); got != tc.wantBlankMemHeadroom+map[bool]string{true: "0", false: ""}[len(tc.wantBlankMemHeadroom) == 3] {
				t.Errorf("blank memory headroom %s, want %s", got, tc.wantBlankMemHeadroom)
			}
			if got := c.Metrics[1].Headroom.Rat().FloatString(1); got != "1.0" {
				t.Errorf("a written headroom changed: %s", got)
			}
		})
	}
}
