package recommend_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// The replica-feedback simulation of behaviors.hpa (docs/benchmarks.md, "HPA coexistence").
//
// A Deployment serves a constant total load of feedbackLoadMilli millicores. An HPA
// (autoscaling/v2, cpu averageUtilization feedbackUtil %, 2–10 replicas) sets the replica
// count the way the HPA controller does in steady state: ceil(load ÷ (request × target)),
// within its bounds. Every pod uses load ÷ replicas (±4 % deterministic jitter) and reports
// one sample per 10 s; all pods feed one shared series (SPEC §4.1: N replicas give N samples
// per interval), held in the store's real histogram. Each release the profile is recomputed
// from the last feedbackRetained releases of samples (the retention window) with the
// policy's p95 × 1.2 and the new pods are admitted with it, under each behaviors.hpa mode.
const (
	feedbackLoadMilli   = 2000.0
	feedbackUtil        = 60
	feedbackMinReplicas = 2
	feedbackMaxReplicas = 10
	feedbackReleases    = 8
	feedbackRetained    = 2
	feedbackSamples     = 360 // per pod per release: one hour at 10 s
	// The author's request puts the HPA at its minimum: 2000m ÷ (1667m × 60 %) = 2.0.
	feedbackInitialRequest = 1667
)

type feedbackRelease struct {
	replicas       int
	request        int64 // cpu request the release's pods were admitted with
	util           int32 // the HPA's averageUtilization during the release
	recommendation int64 // the profile's cpu request recommendation after the release
	drift          float64
}

func replicasFor(request int64, util int32) int {
	n := int(math.Ceil(feedbackLoadMilli / (float64(request) * float64(util) / 100)))
	return min(max(n, feedbackMinReplicas), feedbackMaxReplicas)
}

// simulateFeedback runs feedbackReleases releases under mode and returns them.
func simulateFeedback(t *testing.T, mode string) []feedbackRelease {
	t.Helper()
	headroom, err := policy.ParseDecimal("1.2")
	if err != nil {
		t.Fatal(err)
	}
	metrics := []policy.Metric{{Resource: recommend.ResourceCPU, Field: recommend.FieldRequest,
		Aggregation: recommend.AggregationP95, Headroom: headroom}}
	base := sizing.HPABase{Utilization: feedbackUtil, Request: feedbackInitialRequest}
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	request, util := int64(feedbackInitialRequest), int32(feedbackUtil)
	var windows []*series.Histogram
	var out []feedbackRelease
	for r := range feedbackReleases {
		n := replicasFor(request, util)
		perPod := feedbackLoadMilli / float64(n)
		h := &series.Histogram{}
		relStart := start.Add(time.Duration(r) * time.Hour)
		for pod := range n {
			for i := range feedbackSamples {
				jitter := 1 + 0.04*math.Sin(float64(i*7+pod*13))
				if err := h.Add(perPod*jitter, relStart.Add(time.Duration(i)*10*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
		}
		windows = append(windows, h)
		merged := &series.Histogram{}
		for _, w := range windows[max(0, len(windows)-feedbackRetained):] {
			merged.Merge(w)
		}
		stats := recommend.StatsOf(merged, relStart.Add(time.Hour))
		a, err := recommend.Recommend(recommend.ResourceCPU, stats, metrics)
		if err != nil {
			t.Fatal(err)
		}
		rel := feedbackRelease{replicas: n, request: request, util: util, recommendation: a.Request}
		if r > 0 {
			prev := out[r-1].recommendation
			rel.drift = math.Abs(float64(a.Request-prev)) / float64(prev)
		}
		out = append(out, rel)
		// The next release's pods are admitted under behaviors.hpa.
		switch mode {
		case ballastv1.HPAIgnore:
			request = a.Request
		case ballastv1.HPAScaleTarget:
			request = a.Request
			util, _ = sizing.ScaleTargetUtilization(base, sizing.Units(request))
		case ballastv1.HPAPreserve:
			// The cpu request is the author's; memory would be sized (not simulated).
		}
	}
	return out
}

func feedbackTable(mode string, rels []feedbackRelease) string {
	var b strings.Builder
	fmt.Fprintf(&b, "behaviors.hpa: %s\n| release | replicas | cpu request | HPA target | recommendation | drift |\n|---|---|---|---|---|---|\n", mode)
	for i, r := range rels {
		drift := "–"
		if i > 0 {
			drift = fmt.Sprintf("%.1f %%", r.drift*100)
		}
		fmt.Fprintf(&b, "| %d | %d | %dm | %d %% | %dm | %s |\n", i+1, r.replicas, r.request, r.util, r.recommendation, drift)
	}
	return b.String()
}

// TestHPAReplicaFeedback shows that, with today's behavior (ignore), sizing the cpu request an
// HPA scales on walks the recommendation down release after release (smaller request ⇒ higher
// utilization ⇒ more replicas ⇒ less usage per pod ⇒ smaller recommendation) until the HPA
// hits maxReplicas, and that preserve and scale-target hold it within 5 % per release.
// Tolerance: the store's histogram reports p95 within its 2 % bucket resolution, never below.
func TestHPAReplicaFeedback(t *testing.T) {
	const maxDrift = 0.05
	cases := map[string]struct {
		mode      string
		wantWalks bool
	}{
		"ignore walks the recommendation down": {mode: ballastv1.HPAIgnore, wantWalks: true},
		"preserve holds it":                    {mode: ballastv1.HPAPreserve},
		"scale-target holds it":                {mode: ballastv1.HPAScaleTarget},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rels := simulateFeedback(t, tc.mode)
			t.Log("\n" + feedbackTable(tc.mode, rels))
			worst := 0.0
			for _, r := range rels[1:] {
				worst = max(worst, r.drift)
			}
			last := rels[len(rels)-1]
			if tc.wantWalks {
				if worst <= maxDrift || last.replicas != feedbackMaxReplicas {
					t.Errorf("ignore: worst drift %.1f %%, last replicas %d; want the walk down to %d replicas the guard exists for",
						worst*100, last.replicas, feedbackMaxReplicas)
				}
				return
			}
			if worst > maxDrift {
				t.Errorf("worst drift per release %.1f %%, want ≤ %.0f %%", worst*100, maxDrift*100)
			}
			if last.replicas != feedbackMinReplicas {
				t.Errorf("replicas drifted to %d under constant load, want %d", last.replicas, feedbackMinReplicas)
			}
		})
	}
}
