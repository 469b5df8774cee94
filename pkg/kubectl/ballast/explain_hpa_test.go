package ballast

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// TestExplainAdmissionHPAGuard replays admission for a pod whose Deployment an HPA scales on
// cpu utilization, under each behaviors.hpa, and checks the numbers and the guard line.
func TestExplainAdmissionHPAGuard(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	wp := &ballastv1.WorkloadProfile{Status: ballastv1.WorkloadProfileStatus{State: ballastv1.StateSufficient,
		Containers: []ballastv1.ContainerProfile{{Name: "app", Recommendations: map[string]ballastv1.Recommendation{
			"cpu": {Request: "250m"}, "memory": {Request: "300Mi"}}}}}}
	targets := []sizing.HPATarget{{HPA: "web", Resource: corev1.ResourceCPU, Utilization: 60}}
	cases := map[string]struct {
		mode     string
		cpu      string // the cpu request written
		wantLine string
	}{
		"preserve":     {mode: ballastv1.HPAPreserve, cpu: "500m", wantLine: "cpu request left as written: HorizontalPodAutoscaler web scales on cpu utilization 60% (guard HPAConflict, behaviors.hpa: preserve)"},
		"scale-target": {mode: ballastv1.HPAScaleTarget, cpu: "250m", wantLine: "HorizontalPodAutoscaler web target cpu utilization 60% becomes 120%"},
		"ignore":       {mode: ballastv1.HPAIgnore, cpu: "250m", wantLine: "cpu request sized as if no HPA existed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := ballastv1.ResourcePolicySpec{Behaviors: ballastv1.Behaviors{HPA: tc.mode}, Metrics: []ballastv1.MetricSpec{
				{Resource: "cpu", Field: "request", Source: "s", Aggregation: "p95"},
				{Resource: "memory", Field: "request", Source: "s", Aggregation: "p95"}}}
			p, err := policy.Compile(ballastv1.KindClusterResourcePolicy, "", "default", 1, spec, policy.Floors{})
			if err != nil {
				t.Fatal(err)
			}
			ae := explainAdmission(pod, true, ballastv1.ModeApply, wp, p, targets)
			cpu := ""
			for _, f := range ae.Fields {
				if f.Resource == "cpu" && f.Field == "request" {
					cpu = f.Written
				}
			}
			if tc.mode == ballastv1.HPAPreserve {
				if cpu != "" {
					t.Errorf("cpu request planned (%s), want it out of the plan", cpu)
				}
			} else if cpu != tc.cpu {
				t.Errorf("cpu request written %q, want %q", cpu, tc.cpu)
			}
			var buf bytes.Buffer
			pr := &printer{w: &buf}
			writeAdmission(pr, ae)
			if !strings.Contains(buf.String(), tc.wantLine) {
				t.Errorf("explain text lacks %q:\n%s", tc.wantLine, buf.String())
			}
		})
	}
}
