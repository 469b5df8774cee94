package sizing

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func utilMetric(res corev1.ResourceName, pct int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &pct}}}
}

func hpaFor(name, apiVersion, kind, target string, metrics ...autoscalingv2.MetricSpec) autoscalingv2.HorizontalPodAutoscaler {
	return autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: target},
			Metrics:        metrics}}
}

func TestHPATargets(t *testing.T) {
	owners := []Owner{{Group: "apps", Kind: "ReplicaSet", Name: "web-5d8f"}, {Group: "apps", Kind: "Deployment", Name: "web"}}
	ctrMetric := autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType,
		ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceMemory, Container: "app",
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr32(80)}}}
	valueMetric := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType}}}
	podsMetric := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType}
	cases := map[string]struct {
		hpas []autoscalingv2.HorizontalPodAutoscaler
		want []HPATarget
	}{
		"no HPA": {},
		"a cpu utilization HPA on the Deployment": {
			hpas: []autoscalingv2.HorizontalPodAutoscaler{hpaFor("web", "apps/v1", "Deployment", "web", utilMetric(corev1.ResourceCPU, 60))},
			want: []HPATarget{{HPA: "web", Resource: corev1.ResourceCPU, Utilization: 60}},
		},
		"an HPA on the ReplicaSet itself": {
			hpas: []autoscalingv2.HorizontalPodAutoscaler{hpaFor("rs", "apps/v1", "ReplicaSet", "web-5d8f", utilMetric(corev1.ResourceCPU, 50))},
			want: []HPATarget{{HPA: "rs", Resource: corev1.ResourceCPU, Utilization: 50}},
		},
		"an HPA on another Deployment is not ours": {
			hpas: []autoscalingv2.HorizontalPodAutoscaler{hpaFor("api", "apps/v1", "Deployment", "api", utilMetric(corev1.ResourceCPU, 60))},
		},
		"same kind and name in another group is not ours": {
			hpas: []autoscalingv2.HorizontalPodAutoscaler{hpaFor("x", "example.com/v1", "Deployment", "web", utilMetric(corev1.ResourceCPU, 60))},
		},
		"a malformed apiVersion is skipped": {
			hpas: []autoscalingv2.HorizontalPodAutoscaler{hpaFor("x", "a/b/c", "Deployment", "web", utilMetric(corev1.ResourceCPU, 60))},
		},
		"value, pods and container metrics: only utilization counts": {
			hpas: []autoscalingv2.HorizontalPodAutoscaler{hpaFor("web", "apps/v1", "Deployment", "web",
				valueMetric, podsMetric, ctrMetric, utilMetric(corev1.ResourceCPU, 70))},
			want: []HPATarget{
				{HPA: "web", Container: "app", Resource: corev1.ResourceMemory, Utilization: 80, Index: 2},
				{HPA: "web", Resource: corev1.ResourceCPU, Utilization: 70, Index: 3},
			},
		},
		"two HPAs, sorted by name": {
			hpas: []autoscalingv2.HorizontalPodAutoscaler{
				hpaFor("z", "apps/v1", "Deployment", "web", utilMetric(corev1.ResourceMemory, 90)),
				hpaFor("a", "apps/v1", "Deployment", "web", utilMetric(corev1.ResourceCPU, 60)),
			},
			want: []HPATarget{{HPA: "a", Resource: corev1.ResourceCPU, Utilization: 60}, {HPA: "z", Resource: corev1.ResourceMemory, Utilization: 90}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, HPATargets(tc.hpas, owners)); diff != "" {
				t.Errorf("HPATargets (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr32(v int32) *int32 { return &v }

func TestGuardHPA(t *testing.T) {
	cpuHPA := HPATarget{HPA: "web", Resource: corev1.ResourceCPU, Utilization: 60}
	memApp := HPATarget{HPA: "web", Container: "app", Resource: corev1.ResourceMemory, Utilization: 80}
	all := func() Recommendations {
		return Recommendations{
			"app":   {corev1.ResourceCPU: rec(corev1.ResourceCPU, "200m", ""), corev1.ResourceMemory: rec(corev1.ResourceMemory, "256Mi", "512Mi")},
			"proxy": {corev1.ResourceCPU: rec(corev1.ResourceCPU, "50m", ""), corev1.ResourceMemory: rec(corev1.ResourceMemory, "64Mi", "")},
		}
	}
	cases := map[string]struct {
		mode          string
		targets       []HPATarget
		wantRecs      Recommendations
		wantPreserved []HPATarget
		wantRescaled  []HPATarget
		wantAnn       string
	}{
		"no HPA: everything sized": {mode: ballastv1.HPAPreserve, wantRecs: all()},
		"preserve, cpu utilization: cpu of every container left alone, memory sized": {
			mode: ballastv1.HPAPreserve, targets: []HPATarget{cpuHPA},
			wantRecs: Recommendations{
				"app":   {corev1.ResourceMemory: rec(corev1.ResourceMemory, "256Mi", "512Mi")},
				"proxy": {corev1.ResourceMemory: rec(corev1.ResourceMemory, "64Mi", "")},
			},
			wantPreserved: []HPATarget{cpuHPA},
			wantAnn:       "cpu (hpa web, cpu utilization 60%)",
		},
		"preserve, container memory utilization: only that container's memory": {
			mode: ballastv1.HPAPreserve, targets: []HPATarget{memApp},
			wantRecs: Recommendations{
				"app":   {corev1.ResourceCPU: rec(corev1.ResourceCPU, "200m", "")},
				"proxy": {corev1.ResourceCPU: rec(corev1.ResourceCPU, "50m", ""), corev1.ResourceMemory: rec(corev1.ResourceMemory, "64Mi", "")},
			},
			wantPreserved: []HPATarget{memApp},
			wantAnn:       "app/memory (hpa web, memory utilization 80% of container app)",
		},
		"preserve, an HPA on a resource nothing recommends: nothing to report": {
			mode:     ballastv1.HPAPreserve,
			targets:  []HPATarget{{HPA: "web", Resource: corev1.ResourceEphemeralStorage, Utilization: 50}},
			wantRecs: all(),
		},
		"scale-target: everything sized, the HPA is rescaled": {
			mode: ballastv1.HPAScaleTarget, targets: []HPATarget{cpuHPA},
			wantRecs: all(), wantRescaled: []HPATarget{cpuHPA},
		},
		"ignore: today's behavior": {mode: ballastv1.HPAIgnore, targets: []HPATarget{cpuHPA}, wantRecs: all()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := all()
			got, g := GuardHPA(tc.mode, tc.targets, in)
			if diff := cmp.Diff(tc.wantRecs, got); diff != "" {
				t.Errorf("recommendations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPreserved, g.Preserved); diff != "" {
				t.Errorf("preserved (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRescaled, g.Rescaled); diff != "" {
				t.Errorf("rescaled (-want +got):\n%s", diff)
			}
			if a := g.PreservedAnnotationValue(); a != tc.wantAnn {
				t.Errorf("annotation = %q, want %q", a, tc.wantAnn)
			}
			if diff := cmp.Diff(all(), in); diff != "" {
				t.Errorf("input modified (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGuardHPAThroughTheCalculator(t *testing.T) {
	// The cpu request an HPA scales on stays as written at admission; memory is sized.
	p := pod(container("app").req("cpu", "500m", "memory", "1Gi")).obj()
	recs := Recommendations{"app": {corev1.ResourceCPU: rec(corev1.ResourceCPU, "120m", ""),
		corev1.ResourceMemory: rec(corev1.ResourceMemory, "300Mi", "")}}
	guarded, _ := GuardHPA(ballastv1.HPAPreserve, []HPATarget{{HPA: "web", Resource: corev1.ResourceCPU, Utilization: 60}}, recs)
	params := Params{Managed: Managed{{corev1.ResourceCPU, Request}: true, {corev1.ResourceMemory, Request}: true}}
	res := Admission(p, guarded, params)
	if len(res.Changes) != 1 {
		t.Fatalf("changes = %+v, want one container", res.Changes)
	}
	if _, moved := res.Changes[0].Requests[corev1.ResourceCPU]; moved {
		t.Errorf("cpu request written %v, want it left at 500m", res.Changes[0].Requests)
	}
	if got := res.Changes[0].Requests[corev1.ResourceMemory]; got.String() != "300Mi" {
		t.Errorf("memory request = %s, want 300Mi", got.String())
	}
}

func TestScaleTargetUtilization(t *testing.T) {
	cases := map[string]struct {
		base      HPABase
		request   Units
		want      int32
		wantExact bool
	}{
		"same request":                      {HPABase{Utilization: 60, Request: 500}, 500, 60, true},
		"halved request doubles the target": {HPABase{Utilization: 60, Request: 500}, 250, 120, true},
		"raised request lowers it":          {HPABase{Utilization: 60, Request: 500}, 1000, 30, true},
		"above 100 is allowed":              {HPABase{Utilization: 90, Request: 1000}, 300, 300, true},
		"rounded up from .5":                {HPABase{Utilization: 50, Request: 300}, 400, 38, false},  // 37.5
		"rounded up, never to nearest":      {HPABase{Utilization: 60, Request: 500}, 1100, 28, false}, // 27.27
		"rounded up from .86":               {HPABase{Utilization: 60, Request: 500}, 700, 43, false},  // 42.86
		"clamped at 1":                      {HPABase{Utilization: 1, Request: 100}, 1000, 1, false},   // 0.1
		"clamped at MaxInt32":               {HPABase{Utilization: math.MaxInt32, Request: 1 << 40}, 1, math.MaxInt32, false},
		"no request: unchanged, not exact":  {HPABase{Utilization: 60, Request: 500}, 0, 60, false},
		"no base request":                   {HPABase{Utilization: 60, Request: 0}, 500, 60, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, exact := ScaleTargetUtilization(tc.base, tc.request)
			if got != tc.want || exact != tc.wantExact {
				t.Errorf("ScaleTargetUtilization = %d, %v; want %d, %v", got, exact, tc.want, tc.wantExact)
			}
		})
	}
}

func TestRequestSum(t *testing.T) {
	p := pod(container("app").req("cpu", "400m"), container("proxy").req("cpu", "100m")).obj()
	changes := []ContainerChanges{{Name: "app", Requests: corev1.ResourceList{corev1.ResourceCPU: q("200m")}}}
	cases := map[string]struct {
		target                HPATarget
		wantBefore, wantAfter Units
		wantOK                bool
	}{
		"pod-wide cpu":         {HPATarget{Resource: corev1.ResourceCPU}, 500, 300, true},
		"one container":        {HPATarget{Container: "proxy", Resource: corev1.ResourceCPU}, 100, 100, true},
		"memory not requested": {HPATarget{Resource: corev1.ResourceMemory}, 0, 0, false},
		"an unknown container": {HPATarget{Container: "x", Resource: corev1.ResourceCPU}, 0, 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, a, ok := RequestSum(p, changes, tc.target)
			if b != tc.wantBefore || a != tc.wantAfter || ok != tc.wantOK {
				t.Errorf("RequestSum = %d, %d, %v; want %d, %d, %v", b, a, ok, tc.wantBefore, tc.wantAfter, tc.wantOK)
			}
		})
	}
}

func TestHPABaseRoundTrip(t *testing.T) {
	cases := map[string]struct {
		res  corev1.ResourceName
		base HPABase
		text string
	}{
		"cpu":                         {corev1.ResourceCPU, HPABase{Utilization: 60, Request: 500}, "60% of 500m"},
		"memory":                      {corev1.ResourceMemory, HPABase{Utilization: 80, Request: 256 << 20}, "80% of 256Mi"},
		"with the target Ballast set": {corev1.ResourceCPU, HPABase{Utilization: 60, Request: 1667, Set: 81}, "60% of 1667m, set 81%"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := FormatHPABase(tc.res, tc.base); got != tc.text {
				t.Errorf("FormatHPABase = %q, want %q", got, tc.text)
			}
			got, err := ParseHPABase(tc.res, tc.text)
			if err != nil || got != tc.base {
				t.Errorf("ParseHPABase = %+v, %v; want %+v", got, err, tc.base)
			}
		})
	}
	for _, bad := range []string{"", "60", "60% of", "0% of 1", "x% of 1", "60% of -1", "60% of 0", "60% of lots",
		"60% of 1, set 0%", "60% of 1, set 81", "60% of 1, set x%"} {
		if b, err := ParseHPABase(corev1.ResourceCPU, bad); err == nil {
			t.Errorf("ParseHPABase(%q) = %+v, want an error", bad, b)
		}
	}
}

func FuzzParseHPABase(f *testing.F) {
	for _, s := range []string{"60% of 500m", "80% of 256Mi", "1% of 1", "% of ", "99999999999% of 1", "60% of 1, set 200%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseHPABase(corev1.ResourceCPU, s)
		if err != nil {
			return
		}
		if b.Utilization < 1 || b.Request <= 0 || b.Set < 0 {
			t.Fatalf("ParseHPABase(%q) = %+v without error", s, b)
		}
		again, err := ParseHPABase(corev1.ResourceCPU, FormatHPABase(corev1.ResourceCPU, b))
		if err != nil || again != b {
			t.Fatalf("round trip of %+v: %+v, %v", b, again, err)
		}
	})
}

func TestOwnersOf(t *testing.T) {
	yes := true
	cases := map[string]struct {
		refs             []metav1.OwnerReference
		topKind, topName string
		want             []Owner
	}{
		"ReplicaSet under a Deployment": {
			refs:    []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f", Controller: &yes}},
			topKind: "Deployment", topName: "web",
			want: []Owner{{Group: "apps", Kind: "ReplicaSet", Name: "web-5d8f"}, {Group: "apps", Kind: "Deployment", Name: "web"}},
		},
		"a non-controller reference is not an owner": {
			refs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x"}},
		},
		"a DaemonSet is not scalable": {
			refs:    []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: &yes}},
			topKind: "DaemonSet", topName: "ds",
			want: []Owner{{Group: "apps", Kind: "DaemonSet", Name: "ds"}},
		},
		"a bare pod has none": {topKind: "Pod", topName: "p"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.refs}}
			if diff := cmp.Diff(tc.want, OwnersOf(p, tc.topKind, tc.topName)); diff != "" {
				t.Errorf("OwnersOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCurrentBase(t *testing.T) {
	recorded := HPABase{Utilization: 60, Request: 1000, Set: 200}
	cases := map[string]struct {
		recorded HPABase
		ok       bool
		current  int32
		want     HPABase
	}{
		"none recorded: the target as it is at the request before": {ok: false, current: 60, want: HPABase{Utilization: 60, Request: 300}},
		"the target is what Ballast set: the author's base":        {recorded: recorded, ok: true, current: 200, want: recorded},
		"someone changed the target: theirs is the new base":       {recorded: recorded, ok: true, current: 70, want: HPABase{Utilization: 70, Request: 300}},
		"an old base without set is trusted":                       {recorded: HPABase{Utilization: 60, Request: 1000}, ok: true, current: 90, want: HPABase{Utilization: 60, Request: 1000}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CurrentBase(tc.recorded, tc.ok, tc.current, 300); got != tc.want {
				t.Errorf("CurrentBase = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestHPAGuardScalesOn(t *testing.T) {
	cpu := HPATarget{HPA: "web", Resource: corev1.ResourceCPU, Utilization: 60}
	mem := HPATarget{HPA: "web", Resource: corev1.ResourceMemory, Utilization: 80}
	cases := []struct {
		name  string
		g     HPAGuard
		onCPU bool
	}{
		{"no HPA", HPAGuard{}, false},
		// No recommendation yet (a boost only): nothing preserved, the HPA still reads cpu.
		{"cpu, nothing sized", func() HPAGuard { _, g := GuardHPA(ballastv1.HPAPreserve, []HPATarget{cpu}, nil); return g }(), true},
		{"rescaled cpu", func() HPAGuard { _, g := GuardHPA(ballastv1.HPAScaleTarget, []HPATarget{cpu}, nil); return g }(), true},
		{"ignored", func() HPAGuard { _, g := GuardHPA(ballastv1.HPAIgnore, []HPATarget{cpu}, nil); return g }(), false},
		{"memory only", func() HPAGuard { _, g := GuardHPA(ballastv1.HPAPreserve, []HPATarget{mem}, nil); return g }(), false},
	}
	for _, tc := range cases {
		if got := tc.g.ScalesOn(corev1.ResourceCPU); got != tc.onCPU {
			t.Errorf("%s: ScalesOn(cpu) = %v, want %v", tc.name, got, tc.onCPU)
		}
	}
}
