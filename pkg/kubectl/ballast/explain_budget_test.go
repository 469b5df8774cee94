package ballast

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// TestExplainBudget: explain names the guard holding a shrink and when the next shrink
// may happen, from the profile's persisted history, and the caps of restarting resizes.
func TestExplainBudget(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	spec := ballastv1.ResourcePolicySpec{
		Metrics:   []ballastv1.MetricSpec{{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg"}},
		Behaviors: ballastv1.Behaviors{Resize: ballastv1.ResizeBehavior{Interval: "15m", MaxConcurrentResizes: &ballastv1.MaxConcurrentResizes{PerNode: ptr.To[int32](2)}}},
	}
	pol, err := policy.Compile(ballastv1.KindClusterResourcePolicy, "", "default", 1, spec, policy.Floors{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{ballastv1.ModeLabel: ballastv1.ModeResize}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", ResizePolicy: []corev1.ContainerResizePolicy{
			{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}}}}}
	wp := &ballastv1.WorkloadProfile{Status: ballastv1.WorkloadProfileStatus{ResizeHistory: []ballastv1.ResizeHistoryEntry{
		{Time: metav1.NewTime(now.Add(-20 * time.Minute)), Kind: ballastv1.ResizeHistoryRaiseBack, Workload: "ns/Pod/web", Pod: "web"}}}}

	b := explainBudget(pod, wp, pol, now)
	if b == nil || b.ShrinkHold != "raise_cooldown" || b.NextShrink != "2026-12-04T12:40:00Z" || b.Cooldown != "1h0m0s" {
		t.Fatalf("budget = %+v", b)
	}
	var out bytes.Buffer
	writeBudget(&printer{w: &out}, b)
	for _, want := range []string{
		"guard raise_cooldown: shrink held: raise-back of the workload at 2026-12-04T11:40:00Z",
		"next shrink at 2026-12-04T12:40:00Z",
		"restarting resizes (app/memory): respect the pod's PodDisruptionBudgets and maxConcurrentResizes perWorkload 10%, perNode 2",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain text lacks %q:\n%s", want, out.String())
		}
	}
	// An hour later nothing holds.
	if b := explainBudget(pod, wp, pol, now.Add(time.Hour)); b.ShrinkHold != "" || b.NextShrink != "now" {
		t.Errorf("after the cooldown: %+v", b)
	}
	// Not in resize mode: no guard section.
	pod.Labels[ballastv1.ModeLabel] = ballastv1.ModeApply
	if b := explainBudget(pod, wp, pol, now); b != nil {
		t.Errorf("apply-mode pod has a budget: %+v", b)
	}
}
