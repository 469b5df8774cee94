package recommend

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestComputeReadErrors(t *testing.T) {
	prevMemory := v1.UsageStats{Resource: "memory", Source: "kubernetes-metrics", Samples: 280, P99: "240.00Mi"}
	previous := []v1.ContainerProfile{{Name: "app", LastSeen: &metav1.Time{Time: now.Add(-time.Minute)},
		UsageStats:      []v1.UsageStats{{Resource: "cpu", Source: "kubernetes-metrics", Samples: 280}, prevMemory},
		Recommendations: workedRecs}}
	readErr := errors.New("connection refused")

	cases := map[string]struct {
		in   Input
		want outcome
		// wantMemoryStats is the memory usageStats entry of "app", when it has one.
		wantMemoryStats *v1.UsageStats
	}{
		"failed series is not ready; its last stats are kept, its recommendation dropped": {
			in: func() Input {
				app := ready("app", now)
				app.ReadErrors = map[string]error{"memory": readErr}
				in := presetInput(app)
				in.Previous = previous
				return in
			}(),
			want: outcome{Containers: []string{"app"},
				Recs: map[string]map[string]v1.Recommendation{"app": {"cpu": workedRecs["cpu"],
					"ephemeral-storage": workedRecs["ephemeral-storage"]}},
				Stats: map[string][]string{"app": {"cpu/kubernetes-metrics/300",
					"ephemeral-storage/kubelet-summary/300", "memory/kubernetes-metrics/280"}},
				State:   "Accruing",
				Ready:   "MissingSamples: No samples in the latest collection cycle for: memory",
				Pending: []string{"app/memory: ReadError"}},
			wantMemoryStats: &prevMemory,
		},
		"failed series without a previous entry has no stats": {
			in: func() Input {
				app := ready("app", now)
				app.ReadErrors = map[string]error{"memory": readErr}
				return presetInput(app)
			}(),
			want: outcome{Containers: []string{"app"},
				Recs: map[string]map[string]v1.Recommendation{"app": {"cpu": workedRecs["cpu"],
					"ephemeral-storage": workedRecs["ephemeral-storage"]}},
				Stats:   map[string][]string{"app": {"cpu/kubernetes-metrics/300", "ephemeral-storage/kubelet-summary/300"}},
				State:   "Accruing",
				Ready:   "MissingSamples: No samples in the latest collection cycle for: memory",
				Pending: []string{"app/memory: ReadError"}},
		},
		"a known container whose every read failed stays considered and blocks": {
			in: func() Input {
				errs := map[string]error{"cpu": readErr, "memory": readErr, "ephemeral-storage": readErr}
				in := presetInput(ContainerInput{Name: "app", ReadErrors: errs})
				in.Previous = previous
				return in
			}(),
			want: outcome{Containers: []string{"app"},
				Stats:   map[string][]string{"app": {"cpu/kubernetes-metrics/280", "memory/kubernetes-metrics/280"}},
				State:   "Accruing",
				Ready:   "MissingSamples: No samples in the latest collection cycle for: cpu, ephemeral-storage, memory",
				Pending: []string{"app/cpu: ReadError", "app/ephemeral-storage: ReadError", "app/memory: ReadError"}},
			wantMemoryStats: &prevMemory,
		},
		"an unknown container whose every read failed is not considered": {
			in: presetInput(ready("app", now), ContainerInput{Name: "new", ReadErrors: map[string]error{"cpu": readErr}}),
			want: outcome{Containers: []string{"app"}, Recs: map[string]map[string]v1.Recommendation{"app": workedRecs},
				Stats: map[string][]string{"app": {"cpu/kubernetes-metrics/300",
					"ephemeral-storage/kubelet-summary/300", "memory/kubernetes-metrics/300"}},
				Meets: true, State: "Sufficient",
				Ready: "SamplesCollected: All policy resources produced samples in the latest collection cycle"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Compute(tc.in)
			if diff := cmp.Diff(tc.want, summarize(got)); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
			if tc.wantMemoryStats == nil {
				return
			}
			for _, u := range got.Containers[0].UsageStats {
				if u.Resource == "memory" {
					if diff := cmp.Diff(*tc.wantMemoryStats, u); diff != "" {
						t.Errorf("carried memory stats (-want +got):\n%s", diff)
					}
				}
			}
		})
	}
}

func TestComputeOOMBump(t *testing.T) {
	// The worked memory limit is 288Mi; a kill at a 300Mi peak calls for 400Mi.
	kill := OOMEvent{Container: "app", Time: now.Add(-time.Minute), PeakBytes: 300 * mib, LimitBytes: 288 * mib}
	cases := map[string]struct {
		containers []ContainerInput
		ooms       []OOMEvent
		wantRecs   map[string]map[string]v1.Recommendation
		wantBumped []string
	}{
		"kill raises request and limit of the killed container only": {
			containers: []ContainerInput{ready("app", now), ready("sidecar", now)},
			ooms:       []OOMEvent{kill},
			wantRecs: map[string]map[string]v1.Recommendation{
				"app": {"cpu": workedRecs["cpu"], "ephemeral-storage": workedRecs["ephemeral-storage"],
					"memory": {Request: "400Mi", Limit: "400Mi"}},
				"sidecar": workedRecs},
			wantBumped: []string{"app"},
		},
		"kill older than retention is forgotten": {
			containers: []ContainerInput{ready("app", now)},
			ooms:       []OOMEvent{{Container: "app", Time: now.Add(-169 * time.Hour), PeakBytes: 300 * mib}},
			wantRecs:   map[string]map[string]v1.Recommendation{"app": workedRecs},
		},
		"kill covered by history changes nothing": {
			containers: []ContainerInput{ready("app", now)},
			ooms:       []OOMEvent{{Container: "app", Time: now, PeakBytes: 100 * mib}}, // calls for 200Mi
			wantRecs:   map[string]map[string]v1.Recommendation{"app": workedRecs},
		},
		"kill of a container whose memory is not ready adds nothing": {
			containers: []ContainerInput{ready("app", now), {Name: "sidecar", Series: map[string]Distribution{
				"memory": fakeSeries(10, now, time.Hour, constant(mib))}}},
			ooms:     []OOMEvent{{Container: "sidecar", Time: now, PeakBytes: 300 * mib}},
			wantRecs: map[string]map[string]v1.Recommendation{"app": workedRecs},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := presetInput(tc.containers...)
			in.OOMs = tc.ooms
			got := Compute(in)
			o := summarize(got)
			if diff := cmp.Diff(tc.wantRecs, o.Recs); diff != "" {
				t.Errorf("recommendations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantBumped, o.Bumped); diff != "" {
				t.Errorf("bumped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeMemoryPeakFeedsMax(t *testing.T) {
	in := presetInput(ready("app", now))
	in.Policy = presetWith(t, func(s *v1.ResourcePolicySpec) {
		s.Metrics = []v1.MetricSpec{{Resource: "memory", Field: "limit", Source: "s", Aggregation: "max", Headroom: "1.1"}}
	})
	cases := map[string]struct {
		peak Distribution
		want string
	}{
		"no peak series: working-set max 250Mi x 1.1": {peak: nil, want: "275Mi"},
		"higher peak 300Mi x 1.1":                     {peak: newFakeDistribution(now, now, 280*mib, 300*mib), want: "330Mi"},
		"lower peak does not lower the max":           {peak: newFakeDistribution(now, now, 100*mib), want: "275Mi"},
		"empty peak series is ignored":                {peak: newFakeDistribution(now, now), want: "275Mi"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in.Containers[0].MemoryPeak = tc.peak
			got := Compute(in)
			if lim := got.Containers[0].Recommendations["memory"].Limit; lim != tc.want {
				t.Errorf("memory limit = %q, want %q", lim, tc.want)
			}
			if mx := got.Containers[0].UsageStats[2].Max; mx != "250.00Mi" {
				t.Errorf("usageStats max = %q, want the working-set max 250.00Mi", mx)
			}
		})
	}
}

func TestPolicyInvalidCondition(t *testing.T) {
	got := PolicyInvalidCondition("team-a/web", "InvalidHeadroom", `metrics[2].headroom "0": must be a decimal > 0`, 4, now)
	want := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, ObservedGeneration: 4,
		LastTransitionTime: metav1.Time{Time: now}, Reason: "PolicyInvalid",
		Message: `Policy team-a/web is invalid: InvalidHeadroom: metrics[2].headroom "0": must be a decimal > 0`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PolicyInvalidCondition (-want +got):\n%s", diff)
	}
	if got := PolicyInvalidCondition("default", "InvalidPattern", "", 1, now).Message; got != "Policy default is invalid: InvalidPattern" {
		t.Errorf("message without detail = %q", got)
	}
}
