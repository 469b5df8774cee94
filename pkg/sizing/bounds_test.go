package sizing

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func newLimitRange(name string, typ corev1.LimitType, min, max, ratio corev1.ResourceList) corev1.LimitRange {
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: typ, Min: min, Max: max, MaxLimitRequestRatio: ratio}}}}
}

func quota(name string, hard, used corev1.ResourceList) corev1.ResourceQuota {
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

// TestAdmissionBounds holds the rejections of issue 12 (each reproduced against a real API
// server before this change) and the other bounds: the patch stays admissible, clamped
// into range where one exists, held back (with the reason) where none does.
func TestAdmissionBounds(t *testing.T) {
	cases := map[string]struct {
		pod         *corev1.Pod
		recs        Recommendations
		bounds      Bounds
		wantChanges []ContainerChanges
		wantSkip    string
		wantNote    string // a substring of the bounded summary
	}{
		"a LimitRange min 256Mi raises a 192Mi memory request to the min": {
			pod:         pod(container("app").req("cpu", "1", "memory", "512Mi").lim("memory", "1Gi")).obj(),
			recs:        Recommendations{"app": {"memory": rec("memory", "192Mi", "")}},
			bounds:      Bounds{LimitRanges: []corev1.LimitRange{newLimitRange("lr", corev1.LimitTypeContainer, rl("memory", "256Mi"), nil, nil)}},
			wantChanges: []ContainerChanges{app(rl("memory", "256Mi"), nil)},
			wantNote:    "app memory request 192Mi→256Mi (limit_range: LimitRange lr Container: min 256Mi)",
		},
		"maxLimitRequestRatio cpu 2 raises a lowered request to limit/2": {
			pod:         pod(container("app").req("cpu", "500m").lim("cpu", "200m")).obj(),
			recs:        Recommendations{"app": {"cpu": rec("cpu", "30m", "")}},
			bounds:      Bounds{LimitRanges: []corev1.LimitRange{newLimitRange("ratio", corev1.LimitTypeContainer, nil, nil, rl("cpu", "2"))}},
			wantChanges: []ContainerChanges{app(rl("cpu", "100m"), nil)},
			wantNote:    "maxLimitRequestRatio 2",
		},
		"a LimitRange max lowers a raised limit and the request with it": {
			pod:         pod(container("app").req("cpu", "100m", "memory", "100Mi").lim("memory", "200Mi")).obj(),
			recs:        Recommendations{"app": {"memory": rec("memory", "300Mi", "400Mi")}},
			bounds:      Bounds{LimitRanges: []corev1.LimitRange{newLimitRange("lr", corev1.LimitTypeContainer, nil, rl("memory", "256Mi"), nil)}},
			wantChanges: []ContainerChanges{app(rl("memory", "256Mi"), rl("memory", "256Mi"))},
			wantNote:    "max 256Mi",
		},
		"pod-level requests hold the aggregate: the second container's raise is held back": {
			pod: pod(container("app").req("cpu", "100m"), container("side").req("cpu", "100m")).
				podLevel(corev1.ResourceRequirements{Requests: rl("cpu", "200m")}).obj(),
			recs:        Recommendations{"app": {"cpu": rec("cpu", "50m", "")}, "side": {"cpu": rec("cpu", "250m", "")}},
			wantChanges: []ContainerChanges{app(rl("cpu", "50m"), nil)},
			wantNote:    "side cpu request 250m held at 100m (pod_resources: pod request 200m, aggregate container requests 300m)",
		},
		"quota without headroom holds a raise back and the pod is admitted unchanged": {
			pod:      pod(container("app").req("cpu", "100m")).obj(),
			recs:     Recommendations{"app": {"cpu": rec("cpu", "300m", "")}},
			bounds:   Bounds{Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "1"), rl("requests.cpu", "800m"))}},
			wantSkip: ReasonQuota,
		},
		"quota headroom admits a raise that fits": {
			pod:         pod(container("app").req("cpu", "100m")).obj(),
			recs:        Recommendations{"app": {"cpu": rec("cpu", "300m", "")}},
			bounds:      Bounds{Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "1"), rl("requests.cpu", "500m"))}},
			wantChanges: []ContainerChanges{app(rl("cpu", "300m"), nil)},
		},
		"shrinking never needs quota headroom": {
			pod:         pod(container("app").req("cpu", "500m")).obj(),
			recs:        Recommendations{"app": {"cpu": rec("cpu", "300m", "")}},
			bounds:      Bounds{Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "1"), rl("requests.cpu", "1"))}},
			wantChanges: []ContainerChanges{app(rl("cpu", "300m"), nil)},
		},
		"an absurd profile value is capped at the allowed max": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "128Mi")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "77980m", ""), "memory": rec("memory", "1Ti", "")}},
			bounds: Bounds{Allowed: map[corev1.ResourceName]Range{
				"cpu":    {Max: 4000, HasMax: true, MaxFrom: "largest node allocatable 4"},
				"memory": {Max: u("memory", "16Gi"), HasMax: true, MaxFrom: "policy maxAllowed 16Gi"}}},
			wantChanges: []ContainerChanges{app(rl("cpu", "4", "memory", "16Gi"), nil)},
			wantNote:    "app cpu request 77980m→4 (out_of_bounds: above largest node allocatable 4)",
		},
		"a Pod-type LimitRange max holds a raise back and the pod is admitted unchanged": {
			pod:      pod(container("app").req("memory", "100Mi").lim("memory", "200Mi")).obj(),
			recs:     Recommendations{"app": {"memory": rec("memory", "150Mi", "300Mi")}},
			bounds:   Bounds{LimitRanges: []corev1.LimitRange{newLimitRange("lr", corev1.LimitTypePod, nil, rl("memory", "256Mi"), nil)}},
			wantSkip: ReasonLimitRange,
			wantNote: "app memory limit 300Mi held at 200Mi (limit_range: LimitRange lr Pod: max 256Mi, limit 300Mi)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Params{Managed: allManaged(), Bounds: tc.bounds}
			got := Admission(tc.pod, tc.recs, p)
			if diff := cmp.Diff(tc.wantChanges, got.Changes, cmpOpts...); diff != "" {
				t.Errorf("changes (-want +got):\n%s\nbounded: %s", diff, Summary(got.Bounded))
			}
			if got.SkipReason != tc.wantSkip {
				t.Errorf("skip reason = %q, want %q (bounded: %s)", got.SkipReason, tc.wantSkip, Summary(got.Bounded))
			}
			if tc.wantNote != "" && !strings.Contains(Summary(got.Bounded), tc.wantNote) {
				t.Errorf("bounded = %q, want it to contain %q", Summary(got.Bounded), tc.wantNote)
			}
			if len(got.Changes) > 0 && len(got.Bounded) > 0 && got.Annotations[v1.BoundedAnnotation] == "" {
				t.Errorf("no bounded annotation: %v", got.Annotations)
			}
			if vs := violations(tc.pod, got.Changes, tc.bounds); len(vs) > 0 {
				t.Errorf("written changes still fail admission: %+v", vs)
			}
		})
	}
}

// TestResizeBounds: the resize controller's targets obey the same bounds.
func TestResizeBounds(t *testing.T) {
	p := Params{Managed: allManaged(), Bounds: Bounds{LimitRanges: []corev1.LimitRange{
		newLimitRange("lr", corev1.LimitTypeContainer, rl("cpu", "150m"), nil, nil)}}}
	pd := pod(container("app").req("cpu", "400m").lim("cpu", "1")).obj()
	d := Resize(pd, Recommendations{"app": {"cpu": rec("cpu", "100m", "")}}, p)
	if d.Reason != "" || len(d.Changes) != 1 {
		t.Fatalf("decision = %+v", d)
	}
	if got := d.Changes[0].Requests.Cpu(); got.Cmp(q("150m")) < 0 {
		t.Errorf("resize request %s is below the LimitRange min 150m", got)
	}
	held := Resize(pod(container("app").req("cpu", "100m")).obj(), Recommendations{"app": {"cpu": rec("cpu", "300m", "")}},
		Params{Managed: allManaged(), Bounds: Bounds{Quotas: []corev1.ResourceQuota{quota("q", rl("cpu", "1"), rl("cpu", "1"))}}})
	if held.Reason != ReasonQuota {
		t.Errorf("resize reason = %q (%s), want %q", held.Reason, held.Message, ReasonQuota)
	}
}
