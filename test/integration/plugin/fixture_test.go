package plugin

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
)

var idLabels = []string{"app.kubernetes.io/name", "app.kubernetes.io/component"}

const (
	labelName      = "app.kubernetes.io/name"
	labelComponent = "app.kubernetes.io/component"
)

func metric(res, field, agg, headroom string) ballastv1.MetricSpec {
	return ballastv1.MetricSpec{Resource: res, Field: field, Source: "kubernetes-metrics", Aggregation: agg, Headroom: headroom}
}

func profileName(kind, ns, policyName string, labels map[string]string) string {
	tuple, sel := identity.Tuple(idLabels, labels)
	return identity.ProfileName(idLabels, tuple, sel, identity.Discriminator(kind, ns, policyName))
}

func resources(cpuReq, cpuLim, memReq, memLim string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	set := func(l corev1.ResourceList, n corev1.ResourceName, v string) {
		if v != "" {
			l[n] = resource.MustParse(v)
		}
	}
	set(r.Requests, corev1.ResourceCPU, cpuReq)
	set(r.Limits, corev1.ResourceCPU, cpuLim)
	set(r.Requests, corev1.ResourceMemory, memReq)
	set(r.Limits, corev1.ResourceMemory, memLim)
	return r
}

func template(labels map[string]string, res corev1.ResourceRequirements) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1", Resources: res}}}}
}

func stats(res string, samples int64, span, mean, cv, p75, p99 string) ballastv1.UsageStats {
	return ballastv1.UsageStats{Resource: res, Source: "kubernetes-metrics", Samples: samples, TimeSpan: span,
		P50: mean, P75: p75, P90: p99, P95: p99, P99: p99, Max: p99, Mean: mean, StdDev: "0", CV: cv}
}

// fixture creates the objects of the profiles and explain tests.
//
//   - shop/web (Deployment → ReplicaSet → 2 pods, mode apply) and billing/web-standalone (a
//     bare pod, mode measure) share the profile of ClusterResourcePolicy default.
//   - shop/cache (Deployment, mode apply) is governed by ResourcePolicy shop/shop-fast, which
//     beats the higher-priority ClusterResourcePolicy catch-all.
//   - shop/api (Deployment, mode resize) has an Accruing profile.
type fixture struct {
	web, cache, api string // profile names
}

func setup(t testing.TB, c client.Client) fixture {
	t.Helper()
	ctx := context.Background()
	mustCreate := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	for _, ns := range []string{"shop", "billing"} {
		mustCreate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	mustCreate(&ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: "ballast"},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: idLabels}})
	readiness := ballastv1.Readiness{MinDataPoints: 250, MinTimeSpan: "24h", MaxCV: "1.5",
		CVMeanFloor: map[string]string{"cpu": "25m", "memory": "25Mi"}}
	mustCreate(&ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{
			metric("cpu", "request", "avg", "1.25"), metric("memory", "request", "p75", "1.0"),
			metric("memory", "limit", "p99", "1.2")}, Readiness: readiness}})
	mustCreate(&ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "batch-jobs"},
		Spec: ballastv1.ResourcePolicySpec{Priority: 10, Selector: ballastv1.PolicySelector{Kinds: []string{"Job", "CronJob"}},
			Metrics: []ballastv1.MetricSpec{metric("cpu", "request", "p90", "")}}})
	mustCreate(&ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "catch-all"},
		Spec: ballastv1.ResourcePolicySpec{Priority: 5, Selector: ballastv1.PolicySelector{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelName: "cache"}}},
			Metrics: []ballastv1.MetricSpec{metric("cpu", "request", "max", "")}}})
	mustCreate(&ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop-fast"},
		Spec: ballastv1.ResourcePolicySpec{Selector: ballastv1.PolicySelector{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelName: "cache"}}},
			Metrics:   []ballastv1.MetricSpec{metric("cpu", "request", "avg", "1.25"), metric("memory", "request", "p75", "")},
			Readiness: readiness}})

	webLabels := map[string]string{labelName: "web", labelComponent: "server", ballastv1.ModeLabel: "apply"}
	cacheLabels := map[string]string{labelName: "cache", labelComponent: "store", ballastv1.ModeLabel: "apply"}
	apiLabels := map[string]string{labelName: "api", labelComponent: "server", ballastv1.ModeLabel: "resize"}
	f := fixture{
		web:   profileName(ballastv1.KindClusterResourcePolicy, "", "default", webLabels),
		cache: profileName(ballastv1.KindResourcePolicy, "shop", "shop-fast", cacheLabels),
		api:   profileName(ballastv1.KindClusterResourcePolicy, "", "default", apiLabels),
	}
	// Deployments with one ReplicaSet each and their pods as admission wrote them.
	deploy := func(name string, labels map[string]string, tmpl, admitted corev1.ResourceRequirements, profile, policyRef string, pods int, extra map[string]string) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(pods)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{labelName: labels[labelName]}},
				Template: template(labels, tmpl)}}
		mustCreate(d)
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-5d8f7c9b6",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(pods)), Selector: d.Spec.Selector, Template: template(labels, tmpl)}}
		mustCreate(rs)
		for i := range pods {
			ann := map[string]string{ballastv1.ProfileRefAnnotation: profile, ballastv1.PolicyRefAnnotation: policyRef}
			for k, v := range extra {
				ann[k] = v
			}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: rs.Name + "-" + string(rune('a'+i)) + "x7q",
				Labels: labels, Annotations: ann,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
				Spec: template(labels, admitted).Spec}
			mustCreate(p)
		}
	}
	deploy("web", webLabels, resources("100m", "", "100Mi", "256Mi"), resources("300m", "", "192Mi", "288Mi"), f.web, "default", 2,
		map[string]string{ballastv1.AppliedAnnotation("cpu", "request"): "300m", ballastv1.AppliedAnnotation("memory", "request"): "192Mi",
			ballastv1.AppliedAnnotation("memory", "limit"): "288Mi"})
	deploy("cache", cacheLabels, resources("100m", "200m", "100Mi", "128Mi"), resources("199m", "200m", "134217727", "128Mi"), f.cache, "shop/shop-fast", 1,
		map[string]string{ballastv1.AppliedAnnotation("cpu", "request"): "199m", ballastv1.AppliedAnnotation("memory", "request"): "134217727",
			ballastv1.ClampedAnnotation("cpu"): "200m", ballastv1.ClampedAnnotation("memory"): "152508Ki"})
	deploy("api", apiLabels, resources("500m", "", "512Mi", ""), resources("500m", "", "512Mi", ""), f.api, "default", 1,
		map[string]string{ballastv1.ResizeStateAnnotation: "Deferred", ballastv1.ResizeStateSinceAnnotation: "2026-01-02T03:04:05Z",
			ballastv1.LastResizeAnnotation: "2026-01-02T03:04:00Z"})
	standalone := map[string]string{labelName: "web", labelComponent: "server", ballastv1.ModeLabel: "measure"}
	mustCreate(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: "web-standalone", Labels: standalone,
		Annotations: map[string]string{ballastv1.ProfileRefAnnotation: f.web, ballastv1.PolicyRefAnnotation: "default"}},
		Spec: template(standalone, resources("1", "", "1Gi", "")).Spec})

	// Profiles as the controllers would have written them.
	profile := func(name, state string, ref ballastv1.PolicyRef, labels map[string]string, pods, workloads int32,
		st []ballastv1.UsageStats, recs map[string]ballastv1.Recommendation, rs ballastv1.ResizeSummary) {
		wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
		mustCreate(wp)
		tuple, sel := identity.Tuple(idLabels, labels)
		wp.Status = ballastv1.WorkloadProfileStatus{TupleLabels: tuple, SelectorLabels: sel, PolicyRef: &ref,
			MeasurementHash: "0123456789abcdef", State: state, MeetsThreshold: state == ballastv1.StateSufficient,
			ActivePods: pods, ActiveWorkloads: workloads, Resize: rs,
			Containers: []ballastv1.ContainerProfile{{Name: "app", LastSeen: &metav1.Time{Time: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)},
				UsageStats: st, Recommendations: recs}}}
		if err := c.Status().Update(ctx, wp); err != nil {
			t.Fatalf("writing status of %s: %v", name, err)
		}
	}
	crp := ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "default"}
	profile(f.web, ballastv1.StateSufficient, crp, webLabels, 3, 2,
		[]ballastv1.UsageStats{stats("cpu", 4320, "36h0m0s", "240m", "0.400", "260m", "400m"),
			stats("memory", 4320, "36h0m0s", "180.00Mi", "0.100", "192.00Mi", "240.00Mi")},
		map[string]ballastv1.Recommendation{"cpu": {Request: "300m"}, "memory": {Request: "192Mi", Limit: "400Mi"}}, ballastv1.ResizeSummary{})
	profile(f.cache, ballastv1.StateSufficient, ballastv1.PolicyRef{Kind: ballastv1.KindResourcePolicy, Namespace: "shop", Name: "shop-fast"}, cacheLabels, 1, 1,
		[]ballastv1.UsageStats{stats("cpu", 900, "25h0m0s", "400m", "0.200", "420m", "500m"),
			stats("memory", 900, "25h0m0s", "140.00Mi", "0.050", "148.93Mi", "150.00Mi")},
		map[string]ballastv1.Recommendation{"cpu": {Request: "500m"}, "memory": {Request: "152508Ki"}}, ballastv1.ResizeSummary{})
	profile(f.api, ballastv1.StateAccruing, crp, apiLabels, 1, 1,
		[]ballastv1.UsageStats{stats("cpu", 120, "2h0m0s", "20m", "2.100", "20m", "90m"),
			stats("memory", 120, "2h0m0s", "300.00Mi", "1.800", "310.00Mi", "400.00Mi")},
		nil, ballastv1.ResizeSummary{DeferredPods: 1, OldestDeferredSince: &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}})
	// api runs on a node without a node agent: a third of its samples came through the
	// metrics.k8s.io fallback, at metrics-server's default 60 s resolution.
	wp := &ballastv1.WorkloadProfile{}
	if err := c.Get(ctx, client.ObjectKey{Name: f.api}, wp); err != nil {
		t.Fatal(err)
	}
	wp.Status.Fallback = &ballastv1.FallbackStatus{Samples: 80, Share: "33.3%", Resolution: &metav1.Duration{Duration: time.Minute}, UncoveredPods: 1}
	wp.Status.Conditions = append(wp.Status.Conditions, metav1.Condition{Type: ballastv1.ConditionAgentCoverage, Status: metav1.ConditionFalse,
		Reason: ballastv1.ReasonMeasuredThroughMetricsAPI, LastTransitionTime: metav1.Time{Time: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)},
		Message: "1 pod(s) on nodes without a live node agent are measured through metrics.k8s.io at its resolution (cpu, memory); their ephemeral-storage is not measured"})
	if err := c.Status().Update(ctx, wp); err != nil {
		t.Fatalf("writing the fallback status of %s: %v", f.api, err)
	}
	return f
}
