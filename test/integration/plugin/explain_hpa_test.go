package plugin

import (
	"context"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// explainHPA adds an HPA on cpu utilization to deploy/web and checks that explain replays the
// default behaviors.hpa (preserve): the cpu request is left as written and the guard is named;
// memory is still sized. The HPA is removed again so the other views keep their goldens.
func explainHPA(t *testing.T, kc string) {
	ctx := context.Background()
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}}},
		}}
	if err := srv.Kube.Client.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Kube.Client.Delete(ctx, h); err != nil {
			t.Error(err)
		}
	}()
	r := run(t, kc, "explain", "-n", "shop", "deploy/web")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"  cpu request left as written: HorizontalPodAutoscaler web scales on cpu utilization 60% (guard HPAConflict, behaviors.hpa: preserve)",
		"  app memory request: 100Mi -> 192Mi (the recommendation)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "app cpu request: 100m -> 300m") {
		t.Errorf("explain still sizes the cpu request an HPA scales on:\n%s", r.stdout)
	}
}
