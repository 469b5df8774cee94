package chart

import (
	"context"
	"strconv"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// checkHPAPolicy: with hpa.scaleTarget, ballast-control may move the averageUtilization of a
// Resource or ContainerResource utilization metric and write its own annotations; any other
// change of an HPA is denied.
func checkHPAPolicy(t *testing.T, cx context.Context, sa client.Client) {
	admin := srv.Kube.Client
	policy := limitsRelease + "-control-hpa-patches"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vap-hpas"}}
	if err := admin.Create(cx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web", Annotations: map[string]string{"team.example/owner": "shop"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(mustQuantity("100"))}}},
			}},
	}
	if err := admin.Create(cx, h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), h) })
	key := client.ObjectKeyFromObject(h)
	// update reads the HPA as admin, applies f, and writes it as c (a merge patch of the
	// whole object, as the scaler sends).
	update := func(c client.Client, f func(*autoscalingv2.HorizontalPodAutoscaler)) error {
		cur := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := admin.Get(cx, key, cur); err != nil {
			return err
		}
		next := cur.DeepCopy()
		f(next)
		return c.Patch(cx, next, client.MergeFrom(cur))
	}
	maxReplicas := func(n int) func(*autoscalingv2.HorizontalPodAutoscaler) {
		return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = int32(probe + n) }
	}
	untilDenied(t, policy, "a maxReplicas change", func(n int) error { return update(sa, maxReplicas(n)) })
	// A try may have passed before the policy loaded: put the author's bound back.
	if err := update(admin, func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 10 }); err != nil {
		t.Fatal(err)
	}

	allowed := map[string]func(*autoscalingv2.HorizontalPodAutoscaler){
		"the cpu utilization target and its base": func(h *autoscalingv2.HorizontalPodAutoscaler) {
			*h.Spec.Metrics[0].Resource.Target.AverageUtilization = 200
			h.Annotations[ballastv1.HPABaseAnnotationPrefix+"0"] = "60% of 1"
		},
		"above 100 %": func(h *autoscalingv2.HorizontalPodAutoscaler) {
			*h.Spec.Metrics[0].Resource.Target.AverageUtilization = 450
		},
	}
	for name, f := range allowed {
		if err := update(sa, f); err != nil {
			t.Errorf("%s: ballast-control's own write was refused: %v", name, err)
		}
	}
	refused := map[string]func(*autoscalingv2.HorizontalPodAutoscaler){
		"maxReplicas":      func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 1000 },
		"minReplicas":      func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](1) },
		"the scale target": func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = "other" },
		"the metric's resource": func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Resource.Name = corev1.ResourceMemory
		},
		"the target type": func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Resource.Target = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(mustQuantity("1"))}
		},
		"a pods metric": func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[1].Pods.Target.AverageValue = ptr.To(mustQuantity("1"))
		},
		"dropping a metric":    func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics = h.Spec.Metrics[:1] },
		"a foreign annotation": func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Annotations["team.example/owner"] = "attacker" },
		"a label":              func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Labels = map[string]string{"x": strconv.Itoa(1)} },
	}
	for name, f := range refused {
		if err := update(sa, f); !deniedBy(err, policy) {
			t.Errorf("changing %s as ballast-control: err = %v, want a denial by %s", name, err, policy)
		}
	}
	got := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := admin.Get(cx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.MaxReplicas != 10 || got.Spec.ScaleTargetRef.Name != "web" || len(got.Spec.Metrics) != 2 {
		t.Errorf("a refused change reached the HPA: %+v", got.Spec)
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
