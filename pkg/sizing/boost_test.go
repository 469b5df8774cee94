package sizing

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/policy"
)

func factor(s string) policy.Boost {
	f, m, ok := policy.ParseBoostCPU(s)
	if !ok {
		panic("bad boost " + s)
	}
	return policy.Boost{Factor: f, MilliCPU: m, ReadyFor: time.Minute}
}

// cpuOf renders each long-running container's cpu as "request/limit" ("-" when absent).
func cpuOf(p *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, ref := range LongRunning(&p.Spec) {
		c := ref.Container(&p.Spec)
		req, lim := "-", "-"
		if q := nonZero(c.Resources.Requests, corev1.ResourceCPU); q != nil {
			req = q.String()
		}
		if q := limitOf(c, corev1.ResourceCPU); q != nil {
			lim = q.String()
		}
		out[c.Name] = req + "/" + lim
	}
	return out
}

func TestStartupBoost(t *testing.T) {
	cases := map[string]struct {
		pod     *corev1.Pod
		sized   Result
		boost   string
		bounds  Bounds
		nodeCPU string // "" means no node known
		want    map[string]string
		outcome string
		msg     string
	}{
		"burstable request doubled, no limit": {
			pod:   pod(container("app").req("cpu", "250m", "memory", "128Mi")).obj(),
			boost: "2x", nodeCPU: "4",
			want: map[string]string{"app": "500m/-"}, outcome: BoostApplied,
		},
		"request and limit both multiplied": {
			pod:   pod(container("app").req("cpu", "250m").lim("cpu", "1")).obj(),
			boost: "3x", nodeCPU: "8",
			want: map[string]string{"app": "750m/3"}, outcome: BoostApplied,
		},
		"guaranteed stays guaranteed": {
			pod:   pod(container("app").req("cpu", "500m", "memory", "1Gi").lim("cpu", "500m", "memory", "1Gi")).obj(),
			boost: "2x", nodeCPU: "4",
			want: map[string]string{"app": "1/1"}, outcome: BoostApplied,
		},
		"boost applies to the sized request, not the author's": {
			pod: pod(container("app").req("cpu", "1")).obj(),
			sized: Result{Changes: []ContainerChanges{{Name: "app", Index: 0,
				Requests: rl("cpu", "200m")}}},
			boost: "2x", nodeCPU: "4",
			want: map[string]string{"app": "400m/-"}, outcome: BoostApplied,
		},
		"absolute value raises smaller requests, limit follows": {
			pod: pod(container("app").req("cpu", "100m").lim("cpu", "200m"),
				container("big").req("cpu", "2")).obj(),
			boost: "1500m", nodeCPU: "8",
			want: map[string]string{"app": "1500m/1500m", "big": "2/-"}, outcome: BoostApplied,
		},
		"best effort is left alone": {
			pod:   pod(container("app")).obj(),
			boost: "2x", nodeCPU: "4",
			want: map[string]string{"app": "-/-"}, outcome: BoostNoRequest,
		},
		"capped to the largest node's allocatable, sidecar included": {
			pod: pod(container("app").req("cpu", "1")).
				init(container("proxy").req("cpu", "1").always()).obj(),
			boost: "3x", nodeCPU: "4",
			// 2 cores of room shared by the two containers' 2 cores of extra each: half each.
			want: map[string]string{"app": "2/-", "proxy": "2/-"}, outcome: BoostCapped,
			msg: "largest node's allocatable cpu 4",
		},
		"no room at all": {
			pod:   pod(container("app").req("cpu", "4")).obj(),
			boost: "2x", nodeCPU: "4",
			want: map[string]string{"app": "4/-"}, outcome: BoostNoRoom,
		},
		"no node known: only the bounds cap": {
			pod:   pod(container("app").req("cpu", "4")).obj(),
			boost: "2x",
			want:  map[string]string{"app": "8/-"}, outcome: BoostApplied,
		},
		"limit range max caps the boost": {
			pod:   pod(container("app").req("cpu", "400m").lim("cpu", "800m")).obj(),
			boost: "4x", nodeCPU: "8",
			bounds: Bounds{LimitRanges: []corev1.LimitRange{newLimitRange("lr", corev1.LimitTypeContainer, nil, rl("cpu", "1"), nil)}},
			want:   map[string]string{"app": "1/1"}, outcome: BoostCapped, msg: "limit_range",
		},
		"quota without headroom holds it back": {
			pod:   pod(container("app").req("cpu", "400m")).obj(),
			boost: "2x", nodeCPU: "8",
			bounds: Bounds{Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "1"), rl("requests.cpu", "1"))}},
			want:   map[string]string{"app": "400m/-"}, outcome: BoostHeld,
		},
		"pod-level resources sized from the containers: no boost on top": {
			pod: pod(container("app").req("cpu", "400m")).obj(),
			sized: Result{Changes: []ContainerChanges{{Name: "app", Index: 0, Requests: rl("cpu", "300m")}},
				Pod: &PodPlan{}},
			boost: "2x", nodeCPU: "8",
			want: map[string]string{"app": "300m/-"}, outcome: BoostHeld, msg: "pod-level",
		},
		"a container restarted by a cpu resize is not boosted": {
			pod: func() *corev1.Pod {
				p := pod(container("app").req("cpu", "400m"), container("side").req("cpu", "100m")).obj()
				p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
				return p
			}(),
			boost: "2x", nodeCPU: "8",
			want: map[string]string{"app": "400m/-", "side": "200m/-"}, outcome: BoostApplied,
		},
		"policy maxAllowed caps it": {
			pod:   pod(container("app").req("cpu", "400m")).obj(),
			boost: "4x", nodeCPU: "8",
			bounds: Bounds{Allowed: map[corev1.ResourceName]Range{corev1.ResourceCPU: Range{}.WithMax(1000, "policy maxAllowed 1")}},
			want:   map[string]string{"app": "1/-"}, outcome: BoostCapped,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := BoostInput{Pod: tc.pod, Sized: tc.sized, Boost: factor(tc.boost), Params: Params{Bounds: tc.bounds}}
			if tc.nodeCPU != "" {
				in.NodeCPU, in.HasNodeCPU = u(corev1.ResourceCPU, tc.nodeCPU), true
			}
			before := QoS(WithChanges(tc.pod, tc.sized.Changes))
			d := StartupBoost(in)
			after := WithChanges(tc.pod, d.Result.Changes)
			if diff := cmp.Diff(tc.want, cpuOf(after)); diff != "" {
				t.Errorf("cpu after the boost (-want +got):\n%s", diff)
			}
			if d.Outcome != tc.outcome {
				t.Errorf("outcome = %s (%s), want %s", d.Outcome, d.Message, tc.outcome)
			}
			if !strings.Contains(d.Message, tc.msg) {
				t.Errorf("message %q does not contain %q", d.Message, tc.msg)
			}
			if got := QoS(after); got != before {
				t.Errorf("QoS changed: %s → %s", before, got)
			}
			if (d.Record != nil) != (tc.outcome == BoostApplied || tc.outcome == BoostCapped) {
				t.Fatalf("record = %+v for outcome %s", d.Record, d.Outcome)
			}
			if d.Record == nil {
				return
			}
			// The record round-trips, and taking the boost back restores the sized pod.
			rec, readyFor, err := ParseBoostRecord(d.Record.Encode())
			if err != nil || readyFor != time.Minute {
				t.Fatalf("ParseBoostRecord: %v, %s", err, readyFor)
			}
			restored := WithChanges(after, Unboost(after, rec))
			if diff := cmp.Diff(cpuOf(WithChanges(tc.pod, tc.sized.Changes)), cpuOf(restored)); diff != "" {
				t.Errorf("cpu after the un-boost (-sized +restored):\n%s", diff)
			}
		})
	}
}

func TestUnboostLeavesResizedContainersAlone(t *testing.T) {
	rec := BoostRecord{ReadyFor: "1m0s", Containers: map[string]BoostContainer{
		"app":   {Request: "250m", BoostedRequest: "500m", Limit: "1", BoostedLimit: "2"},
		"other": {Request: "100m", BoostedRequest: "200m"},
		"gone":  {Request: "100m", BoostedRequest: "200m"},
	}}
	p := pod(container("app").req("cpu", "500m").lim("cpu", "3"), // limit changed since: left alone
		container("other").req("cpu", "200m")).obj()
	got := cpuOf(WithChanges(p, Unboost(p, rec)))
	want := map[string]string{"app": "500m/3", "other": "100m/-"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseBoostRecord(t *testing.T) {
	cases := map[string]string{
		"not json":      "2x",
		"bad readyFor":  `{"readyFor":"soon","containers":{"a":{"request":"1","boostedRequest":"2"}}}`,
		"no containers": `{"readyFor":"1m","containers":{}}`,
		"zero request":  `{"readyFor":"1m","containers":{"a":{"request":"0","boostedRequest":"2"}}}`,
		"half a limit":  `{"readyFor":"1m","containers":{"a":{"request":"1","boostedRequest":"2","limit":"1"}}}`,
		"bad ended":     `{"readyFor":"1m","containers":{"a":{"request":"1","boostedRequest":"2"}},"ended":"yesterday"}`,
		"bad boosted":   `{"readyFor":"1m","containers":{"a":{"request":"1","boostedRequest":"lots"}}}`,
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := ParseBoostRecord(s); err == nil {
				t.Errorf("ParseBoostRecord(%s) accepted", s)
			}
		})
	}
	ok := `{"readyFor":"30s","containers":{"a":{"request":"1","boostedRequest":"2","limit":"1","boostedLimit":"2"}},"ended":"2026-12-04T17:00:00Z"}`
	r, d, err := ParseBoostRecord(ok)
	if err != nil || d != 30*time.Second || r.Ended == "" {
		t.Errorf("ParseBoostRecord(valid) = %+v, %s, %v", r, d, err)
	}
}

// FuzzParseBoostRecord: any annotation value is rejected or yields a record whose every
// quantity Unboost can write without panicking.
func FuzzParseBoostRecord(f *testing.F) {
	f.Add(`{"readyFor":"1m","containers":{"app":{"request":"250m","boostedRequest":"500m","limit":"1","boostedLimit":"2"}}}`)
	f.Add(`{"readyFor":"1m","containers":{"app":{"request":"250m","boostedRequest":"500m"}},"ended":"2026-12-04T17:00:00Z"}`)
	f.Add(`{}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, s string) {
		r, d, err := ParseBoostRecord(s)
		if err != nil {
			return
		}
		if d <= 0 {
			t.Fatalf("readyFor %s accepted", d)
		}
		p := pod(container("app").req("cpu", "500m").lim("cpu", "2")).obj()
		_ = Unboost(p, r)
	})
}
