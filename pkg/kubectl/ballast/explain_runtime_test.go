package ballast

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// Explain names the runtime floor that shaped a memory value, the restart-only rule and
// the pod-level resources it writes.
func TestExplainRuntimeAndPodLevel(t *testing.T) {
	spec := ballastv1.ResourcePolicySpec{
		Metrics: []ballastv1.MetricSpec{
			{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75"},
			{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99"},
		},
		Runtime:  ballastv1.RuntimeSpec{Type: "jvm"},
		PodLevel: "size",
	}
	p, err := policy.Compile(ballastv1.KindClusterResourcePolicy, "", "jvm", 1, spec, policy.Floors{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{"memory": resource.MustParse("2Gi")}},
		Containers: []corev1.Container{{Name: "app",
			Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-Xmx512m"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"memory": resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{"memory": resource.MustParse("1Gi")}}}}}}
	wp := &ballastv1.WorkloadProfile{Status: ballastv1.WorkloadProfileStatus{State: ballastv1.StateSufficient,
		Containers: []ballastv1.ContainerProfile{{Name: "app", Recommendations: map[string]ballastv1.Recommendation{
			"memory": {Request: "300Mi", Limit: "400Mi"}}}}}}
	ae := explainAdmission(pod, true, ballastv1.ModeApply, wp, p, nil)
	var buf bytes.Buffer
	pr := &printer{w: &buf}
	writeAdmission(pr, ae)
	out := buf.String()
	for _, want := range []string{
		"1Gi -> 588Mi (the recommendation, shaped by the guard below)",
		"guard: runtime floor (jvm): profile 400Mi raised to 588Mi = heap 512Mi + non-heap 48Mi, +5.0% [JAVA_TOOL_OPTIONS -Xmx512m]",
		"Runtime jvm (floor margin 5%)",
		"restart_only",
		"Pod-level resources (podLevel size): limits memory=2Gi -> limits memory=588Mi",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
}
