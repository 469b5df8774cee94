package profiles

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/fallback"
	"github.com/ballastk8s/ballast/pkg/recommend/feed"
)

type fakeView struct{ cov fallback.ProfileCoverage } // FAKE: the fallback controller's view

func (v fakeView) Coverage(string) fallback.ProfileCoverage { return v.cov }
func (v fakeView) Interval() time.Duration                  { return 30 * time.Second }

func TestApplyFallback(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	share := feed.FallbackShare{Samples: 300, FallbackSamples: 100, Resolution: time.Minute}
	cases := map[string]struct {
		cov         fallback.ProfileCoverage
		share       feed.FallbackShare
		wantStatus  bool
		wantReason  string
		wantMessage string
	}{
		"all node-local":            {},
		"history only, all covered": {share: share, wantStatus: true},
		"measured through the API":  {cov: fallback.ProfileCoverage{UncoveredPods: 2, API: fallback.APIServed}, share: share, wantStatus: true, wantReason: ballastv1.ReasonMeasuredThroughMetricsAPI, wantMessage: "ephemeral-storage is not measured (fallback.ephemeralStorage is off)"},
		"ephemeral through proxy":   {cov: fallback.ProfileCoverage{UncoveredPods: 1, API: fallback.APIServed, EphemeralStorage: true}, wantStatus: true, wantReason: ballastv1.ReasonMeasuredThroughMetricsAPI, wantMessage: "through the kubelet Summary API"},
		"API not served":            {cov: fallback.ProfileCoverage{UncoveredPods: 1, API: fallback.APIUnavailable, Message: "no provider"}, wantStatus: true, wantReason: ballastv1.ReasonMetricsAPIUnavailable, wantMessage: "are not measured: no provider"},
		"fallback off":              {cov: fallback.ProfileCoverage{UncoveredPods: 1, API: fallback.APIDisabled}, wantStatus: true, wantReason: ballastv1.ReasonFallbackDisabled},
	}
	for name, tc := range cases {
		c := &Controller{fallback: fakeView{tc.cov}}
		next := &ballastv1.WorkloadProfileStatus{}
		c.applyFallback("p", next, tc.share, 3, now)
		if (next.Fallback != nil) != tc.wantStatus {
			t.Errorf("%s: status.fallback %+v, want present=%v", name, next.Fallback, tc.wantStatus)
		}
		if tc.share.FallbackSamples > 0 && (next.Fallback.Share != "33.3%" || next.Fallback.Resolution.Duration != time.Minute) {
			t.Errorf("%s: share %q at %v, want 33.3%% at 1m", name, next.Fallback.Share, next.Fallback.Resolution)
		}
		cond := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionAgentCoverage)
		switch {
		case tc.wantReason == "" && cond != nil:
			t.Errorf("%s: unexpected condition %+v", name, cond)
		case tc.wantReason != "" && (cond == nil || cond.Reason != tc.wantReason || !strings.Contains(cond.Message, tc.wantMessage) || cond.ObservedGeneration != 3):
			t.Errorf("%s: condition %+v, want reason %s with %q", name, cond, tc.wantReason, tc.wantMessage)
		}
	}
	// Coverage back: the condition goes away.
	c := &Controller{fallback: fakeView{}}
	next := &ballastv1.WorkloadProfileStatus{}
	(&Controller{fallback: fakeView{fallback.ProfileCoverage{UncoveredPods: 1}}}).applyFallback("p", next, share, 1, now)
	c.applyFallback("p", next, share, 1, now)
	if meta.FindStatusCondition(next.Conditions, ballastv1.ConditionAgentCoverage) != nil {
		t.Error("AgentCoverage stayed after every pod was covered again")
	}
	if got := c.collectionInterval("p", 10*time.Second, share); got != 10*time.Second {
		t.Errorf("collection interval with every pod covered: %v, want the sampling interval", got)
	}
	c = &Controller{fallback: fakeView{fallback.ProfileCoverage{UncoveredPods: 1}}}
	if got := c.collectionInterval("p", 10*time.Second, share); got != time.Minute {
		t.Errorf("collection interval with fallback-fed pods: %v, want the 1m resolution", got)
	}
}
