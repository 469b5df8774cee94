package sizing

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestResizeGate(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
	cases := map[string]struct {
		annotations map[string]string
		want        string
	}{
		"a pod never resized passes":                            {want: ""},
		"a Pending resize is not stacked on":                    {annotations: map[string]string{v1.ResizeStateAnnotation: "Pending"}, want: ReasonResizePending},
		"an InProgress resize is not stacked on":                {annotations: map[string]string{v1.ResizeStateAnnotation: "InProgress"}, want: ReasonResizePending},
		"a Deferred resize is not stacked on":                   {annotations: map[string]string{v1.ResizeStateAnnotation: "Deferred"}, want: ReasonResizePending},
		"a Completed resize past its cooldown passes":           {annotations: map[string]string{v1.ResizeStateAnnotation: "Completed", v1.LastResizeAnnotation: ago(time.Hour)}, want: ""},
		"an Infeasible resize blocked 5m ago backs off":         {annotations: map[string]string{v1.ResizeStateAnnotation: "Infeasible", v1.ResizeBlockedAtAnnotation: ago(5 * time.Minute)}, want: ReasonBlocked},
		"a block exactly one interval old no longer blocks":     {annotations: map[string]string{v1.ResizeBlockedAtAnnotation: ago(15 * time.Minute)}, want: ""},
		"an unparsable blocked-at is ignored":                   {annotations: map[string]string{v1.ResizeBlockedAtAnnotation: "yesterday"}, want: ""},
		"a legacy resize-blocked without -at is evaluated":      {annotations: map[string]string{v1.ResizeBlockedAnnotation: "true"}, want: ""},
		"a resize 14m ago is in cooldown":                       {annotations: map[string]string{v1.LastResizeAnnotation: ago(14 * time.Minute)}, want: ReasonCooldown},
		"an unparsable last-resize is ignored":                  {annotations: map[string]string{v1.LastResizeAnnotation: "2026-03-01"}, want: ""},
		"pending outranks blocked, blocked outranks cooldown":   {annotations: map[string]string{v1.ResizeStateAnnotation: "Pending", v1.ResizeBlockedAtAnnotation: ago(time.Minute), v1.LastResizeAnnotation: ago(time.Minute)}, want: ReasonResizePending},
		"blocked outranks cooldown":                             {annotations: map[string]string{v1.ResizeBlockedAtAnnotation: ago(time.Minute), v1.LastResizeAnnotation: ago(time.Minute)}, want: ReasonBlocked},
		"a timestamp with an offset is compared as an instant":  {annotations: map[string]string{v1.LastResizeAnnotation: now.Add(-20 * time.Minute).In(time.FixedZone("x", 3600)).Format(time.RFC3339)}, want: ""},
		"a timestamp in the future (clock skew) is still young": {annotations: map[string]string{v1.LastResizeAnnotation: now.Add(time.Minute).Format(time.RFC3339)}, want: ReasonCooldown},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reason, message, blocked := ResizeGate(GateInput{Annotations: tc.annotations, Interval: 15 * time.Minute, Now: now})
			if reason != tc.want || blocked != (tc.want != "") {
				t.Errorf("ResizeGate = %q, %v (%s); want %q", reason, blocked, message, tc.want)
			}
		})
	}
}

func TestEvaluateResize(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	drifting := Recommendations{"app": {"cpu": rec("cpu", "500m", "")}}
	cases := map[string]struct {
		pod    *corev1.Pod
		dryRun bool
		want   string
		patch  bool
	}{
		"a drifted pod is patched": {
			pod: pod(container("app").req("cpu", "100m")).obj(), patch: true,
		},
		"the gate decides before the calculator": {
			pod:  pod(container("app").req("cpu", "100m")).annotate(v1.LastResizeAnnotation, now.Add(-time.Minute).Format(time.RFC3339)).obj(),
			want: ReasonCooldown,
		},
		"dry-run carries the would-be patch": {
			pod: pod(container("app").req("cpu", "100m")).obj(), dryRun: true, want: ReasonDryRun, patch: true,
		},
		"dry-run does not hide a calculator skip": {
			pod: pod(container("app").req("cpu", "500m")).obj(), dryRun: true, want: ReasonNoDrift,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := EvaluateResize(ResizeInput{Pod: tc.pod, Recommendations: drifting, Params: settings(defaultManaged(), 10, 50),
				Interval: 15 * time.Minute, Now: now, DryRun: tc.dryRun})
			if d.Reason != tc.want || (len(d.Changes) > 0) != tc.patch {
				t.Errorf("EvaluateResize = %q with %d changes (%s); want %q, patch %v", d.Reason, len(d.Changes), d.Message, tc.want, tc.patch)
			}
		})
	}
}
