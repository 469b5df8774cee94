package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// testHPAGuard: behaviors.hpa preserve on the real node (docs/design-notes.md "HPA
// coexistence"). A one-replica Deployment of the load app, its cpu and memory requests far
// above its use, is scaled by an autoscaling/v2 HPA on cpu averageUtilization 60 (the guard
// reads the object; no metrics API is served, so the HPA controller never scales). Once its
// profile is Sufficient the pod is relabelled to resize: Ballast shrinks the memory request
// and limit in place and the real kubelet writes the new memory.limit_in_bytes, while the
// cpu request and limit stay as written and so do cpu.shares and cpu.cfs_quota_us. The pod
// gets the preserved-by-hpa annotation and an HPAConflict event naming the HPA and metric.
// Without the guard the cpu request (500m against ≈60m of use) would be stepped down too.
func testHPAGuard(t *testing.T, ctx context.Context) {
	const ns = "hpa"
	createNamespace(t, ctx, ns)
	pol := &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "hpa", Namespace: ns},
		Spec: ballastv1.ResourcePolicySpec{
			Metrics: []ballastv1.MetricSpec{
				{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
				{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75", Headroom: "1.0"},
				{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
			},
			Readiness: ballastv1.Readiness{MinDataPoints: 5, MinTimeSpan: "20s", MaxCV: "2.0"},
			Behaviors: ballastv1.Behaviors{Resize: ballastv1.ResizeBehavior{Interval: "5s"}, HPA: ballastv1.HPAPreserve},
		}}
	if err := n.Client.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 3,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
					Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}}},
		}}
	if err := n.Client.Create(ctx, hpa); err != nil {
		t.Fatal(err)
	}
	tmpl := loadPod(ns, "", "hpa", "measure", []string{"-cpu-millis", "50", "-memory-mib", "100"},
		res("500m", "300Mi"), res("1", "400Mi"))
	selector := map[string]string{"app.kubernetes.io/name": "loadapp", "app.kubernetes.io/component": "hpa"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}}
	if err := n.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = n.Client.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationBackground))
		_ = n.Client.Delete(ctx, hpa)
	}()
	p := &corev1.Pod{}
	harness.Eventually(t, 60*time.Second, "the Deployment's pod created", func() error {
		pods := &corev1.PodList{}
		if err := n.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		p = &pods.Items[0]
		return nil
	})
	p = waitRunning(t, ctx, p)
	harness.Eventually(t, 90*time.Second, "profile loadapp/hpa Sufficient", func() error {
		wp, err := profileOf(ctx, "hpa")
		if err != nil {
			return err
		}
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		return nil
	})
	wp, err := profileOf(ctx, "hpa")
	if err != nil {
		t.Fatal(err)
	}
	if r := wp.Status.PolicyRef; r == nil || r.Kind != "ResourcePolicy" || r.Namespace != ns || r.Name != pol.Name {
		t.Fatalf("profile %s governed by %v, want the ResourcePolicy %s/%s (behaviors.hpa: preserve)", wp.Name, r, ns, pol.Name)
	}
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	before := p.Spec.Containers[0].Resources.DeepCopy()
	cs := p.Status.ContainerStatuses[0]
	shares0, quota0 := cpuCgroup(t, p)
	_, limit0 := containerCgroup(t, p)
	t.Logf("before: %s; cgroup cpu.shares %d cpu.cfs_quota_us %d memory.limit_in_bytes %d; "+
		"profile %s recommends cpu %s, memory %s/%s",
		resString(*before), shares0, quota0, limit0, wp.Name,
		recommendation(wp, "cpu").Request, recommendation(wp, "memory").Request, recommendation(wp, "memory").Limit)

	relabelled := time.Now()
	patch := []byte(`{"metadata":{"labels":{"` + modeLabel + `":"resize"}}}`)
	if err := n.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	var patchedAt, completedAt time.Time
	harness.Eventually(t, 60*time.Second, "memory resized in place", func() error {
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		spec := p.Spec.Containers[0].Resources
		if patchedAt.IsZero() && !equalResources(spec, *before) {
			patchedAt = time.Now()
		}
		if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s == ballastv1.ResizeStateInfeasible || s == ballastv1.ResizeStateError {
			return fmt.Errorf("resize-state %s: %s", s, p.Annotations[ballastv1.ResizeBlockedAnnotation])
		}
		st := p.Status.ContainerStatuses[0]
		if patchedAt.IsZero() || p.Annotations[ballastv1.ResizeStateAnnotation] != ballastv1.ResizeStateCompleted ||
			st.Resources == nil || !equalResources(*st.Resources, spec) {
			return fmt.Errorf("spec %v, status %v, resize-state %q", spec, st.Resources, p.Annotations[ballastv1.ResizeStateAnnotation])
		}
		completedAt = time.Now()
		return nil
	})
	after := p.Spec.Containers[0].Resources
	st := p.Status.ContainerStatuses[0]
	if st.RestartCount != cs.RestartCount || st.ContainerID != cs.ContainerID {
		t.Errorf("container restarted: count %d → %d, id %s → %s", cs.RestartCount, st.RestartCount, cs.ContainerID, st.ContainerID)
	}
	for _, q := range []struct {
		what      string
		was, is   resource.Quantity
		mustEqual bool
	}{
		{"cpu request", before.Requests[corev1.ResourceCPU], after.Requests[corev1.ResourceCPU], true},
		{"cpu limit", before.Limits[corev1.ResourceCPU], after.Limits[corev1.ResourceCPU], true},
		{"memory request", before.Requests[corev1.ResourceMemory], after.Requests[corev1.ResourceMemory], false},
		{"memory limit", before.Limits[corev1.ResourceMemory], after.Limits[corev1.ResourceMemory], false},
	} {
		if q.mustEqual && q.was.Cmp(q.is) != 0 {
			t.Errorf("%s %s → %s: the HPA divides by it, preserve must leave it as written", q.what, q.was.String(), q.is.String())
		}
		if !q.mustEqual && q.is.Cmp(q.was) >= 0 {
			t.Errorf("%s %s → %s, want lowered toward the recommendation", q.what, q.was.String(), q.is.String())
		}
	}
	shares, quota := cpuCgroup(t, p)
	_, limit := containerCgroup(t, p)
	if shares != shares0 || quota != quota0 {
		t.Errorf("cpu cgroup changed: cpu.shares %d → %d, cpu.cfs_quota_us %d → %d", shares0, shares, quota0, quota)
	}
	memLim := after.Limits[corev1.ResourceMemory]
	if want := uint64(memLim.Value()) &^ 4095; limit != want || limit == limit0 {
		t.Errorf("memory.limit_in_bytes %d → %d, want %d (%s)", limit0, limit, want, memLim.String())
	}

	wantAnn := "cpu (hpa web, cpu utilization 60%)"
	wantEv := "HPAConflict cpu request left as written: HorizontalPodAutoscaler web scales on cpu utilization 60%"
	harness.Eventually(t, 15*time.Second, "HPAConflict event and preserved-by-hpa annotation", func() error {
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if got := p.Annotations[ballastv1.PreservedByHPAAnnotation]; got != wantAnn {
			return fmt.Errorf("preserved-by-hpa %q, want %q", got, wantAnn)
		}
		evs := podEvents(t, ctx, p)
		for _, e := range evs {
			if strings.HasPrefix(e, wantEv) {
				t.Logf("event: %s", e)
				return nil
			}
		}
		return fmt.Errorf("no event %q among %v", wantEv, evs)
	})
	d := &appsv1.Deployment{}
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("Deployment replicas %v, want 1 (nothing serves metrics, the HPA cannot scale)", d.Spec.Replicas)
	}
	t.Logf("after: %s; cgroup cpu.shares %d cpu.cfs_quota_us %d memory.limit_in_bytes %d; annotation %q",
		resString(after), shares, quota, limit, p.Annotations[ballastv1.PreservedByHPAAnnotation])
	t.Logf("figures: relabel → memory resize patch seen %s, → Completed (kubelet applied) %s",
		patchedAt.Sub(relabelled).Round(10*time.Millisecond), completedAt.Sub(relabelled).Round(10*time.Millisecond))
}

// resString renders requests and limits of cpu and memory as "cpu 500m/1, memory 300Mi/400Mi".
func resString(r corev1.ResourceRequirements) string {
	q := func(l corev1.ResourceList, n corev1.ResourceName) string {
		if v, ok := l[n]; ok {
			return v.String()
		}
		return "-"
	}
	return fmt.Sprintf("cpu %s/%s, memory %s/%s", q(r.Requests, corev1.ResourceCPU), q(r.Limits, corev1.ResourceCPU),
		q(r.Requests, corev1.ResourceMemory), q(r.Limits, corev1.ResourceMemory))
}
