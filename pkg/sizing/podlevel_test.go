package sizing

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestPodLevel(t *testing.T) {
	twoCtr := func(pr corev1.ResourceRequirements) *corev1.Pod {
		return pod(
			container("app").req("cpu", "1", "memory", "1Gi").lim("memory", "1Gi"),
			container("side").req("cpu", "200m", "memory", "256Mi").lim("memory", "256Mi"),
		).podLevel(pr).obj()
	}
	recs := Recommendations{
		"app":  {"cpu": rec("cpu", "300m", ""), "memory": rec("memory", "256Mi", "512Mi")},
		"side": {"cpu": rec("cpu", "100m", ""), "memory": rec("memory", "64Mi", "128Mi")},
	}
	cases := map[string]struct {
		pod          *corev1.Pod
		recs         Recommendations
		podLevel     string
		wantPod      *corev1.ResourceRequirements // nil: no pod-level write
		wantHeld     string
		wantChanges  int
		wantBoundHas string // a BoundNote reason expected (keep)
	}{
		"size: requests and limits from the containers' sums": {
			pod:  twoCtr(corev1.ResourceRequirements{Requests: rl("cpu", "1200m", "memory", "1280Mi"), Limits: rl("memory", "2Gi")}),
			recs: recs, podLevel: PodLevelSize, wantChanges: 2,
			wantPod: &corev1.ResourceRequirements{Requests: rl("cpu", "400m", "memory", "320Mi"), Limits: rl("memory", "640Mi")},
		},
		"size: a Guaranteed pod-level pair stays equal": {
			pod:  twoCtr(corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "2Gi"), Limits: rl("cpu", "2", "memory", "2Gi")}),
			recs: recs, podLevel: PodLevelSize, wantChanges: 2,
			// cpu: containers have no cpu limit, so the limit stays 2 and the request follows it.
			wantPod: &corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "640Mi"), Limits: rl("cpu", "2", "memory", "640Mi")},
		},
		"keep: a raise past the pod-level limit is held back": {
			pod:      twoCtr(corev1.ResourceRequirements{Limits: rl("memory", "1300Mi")}),
			recs:     Recommendations{"app": {"memory": rec("memory", "1200Mi", "1200Mi")}, "side": {"memory": rec("memory", "256Mi", "256Mi")}},
			podLevel: PodLevelKeep, wantBoundHas: ReasonPodResources,
		},
		"size: the same raise resizes the pod-level limit instead": {
			pod:      twoCtr(corev1.ResourceRequirements{Limits: rl("memory", "1300Mi")}),
			recs:     Recommendations{"app": {"memory": rec("memory", "1200Mi", "1200Mi")}, "side": {"memory": rec("memory", "256Mi", "256Mi")}},
			podLevel: PodLevelSize, wantChanges: 1,
			wantPod: &corev1.ResourceRequirements{Limits: rl("memory", "1456Mi")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Params{Managed: defaultManaged(), PodLevel: tc.podLevel}
			plan := Calculate(tc.pod, tc.recs, p, AtOnce)
			res := AdmissionResult(plan)
			if len(res.Changes) != tc.wantChanges {
				t.Errorf("%d container changes, want %d: %+v (skip %s, bounded %s)", len(res.Changes), tc.wantChanges, res.Changes, res.SkipReason, Summary(res.Bounded))
			}
			if tc.wantBoundHas != "" {
				found := false
				for _, n := range res.Bounded {
					found = found || n.Reason == tc.wantBoundHas
				}
				if !found {
					t.Errorf("bounded %s, want a %s note", Summary(res.Bounded), tc.wantBoundHas)
				}
			}
			if tc.wantPod == nil {
				if res.Pod != nil {
					t.Errorf("pod-level write %s, want none", res.Pod)
				}
				return
			}
			if res.Pod == nil {
				t.Fatalf("no pod-level write (plan %+v)", plan.Pod)
			}
			got := &corev1.ResourceRequirements{Requests: res.Pod.Requests, Limits: res.Pod.Limits}
			if diff := cmp.Diff(tc.wantPod, got, cmpOpts...); diff != "" {
				t.Errorf("pod-level (-want +got):\n%s", diff)
			}
			if res.Annotations[v1.AppliedPodResourcesAnnotation] != res.Pod.String() {
				t.Errorf("annotation %q", res.Annotations[v1.AppliedPodResourcesAnnotation])
			}
			// The patched pod keeps its QoS class and is valid against its own pod level.
			patched := WithChanges(tc.pod, res.Changes)
			patched.Spec.Resources = got
			if QoS(patched) != QoS(tc.pod) {
				t.Errorf("QoS %s → %s", QoS(tc.pod), QoS(patched))
			}
			all := map[corev1.ResourceName]bool{"cpu": true, "memory": true}
			if vs := podResourceChecks(patched, patched, aggregate(patched, requestsOf), all); len(vs) != 0 {
				t.Errorf("violations %+v", vs)
			}
			ops, err := JSONPatch(tc.pod, res, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, op := range ops {
				if len(op.Path) > 15 && op.Path[:15] == "/spec/resources" {
					n++
				}
			}
			if n == 0 {
				t.Errorf("no /spec/resources operations in %+v", ops)
			}
		})
	}
}

// podResourceChecks on a pod whose changes are already written: aggregate requests and
// container limits within the pod level.
func TestPodLevelChecksCatchInvalid(t *testing.T) {
	p := pod(container("app").req("memory", "1Gi").lim("memory", "1Gi")).podLevel(corev1.ResourceRequirements{Limits: rl("memory", "512Mi")}).obj()
	after := p.DeepCopy()
	vs := podResourceChecks(p, after, aggregate(after, requestsOf), map[corev1.ResourceName]bool{"memory": true})
	if len(vs) == 0 {
		t.Fatal("a container above the pod limit passed")
	}
}

// In resize, podLevel size rewrites pod-level resources only with PodLevelInPlace; without
// it the containers are kept within them, as with keep.
func TestResizePodLevelInPlace(t *testing.T) {
	p := pod(container("app").req("cpu", "1", "memory", "1Gi").lim("memory", "1Gi")).
		podLevel(corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("memory", "1Gi")}).obj()
	recs := Recommendations{"app": {"cpu": rec("cpu", "500m", ""), "memory": rec("memory", "1536Mi", "1536Mi")}}
	for _, inPlace := range []bool{false, true} {
		params := settings(defaultManaged(), 10, 100)
		params.PodLevel, params.PodLevelInPlace = PodLevelSize, inPlace
		d := Resize(p, recs, params)
		if d.Reason != "" {
			t.Fatalf("inPlace %v: reason %s (%s)", inPlace, d.Reason, d.Message)
		}
		var mem string
		for _, ch := range d.Changes {
			if q, ok := ch.Limits["memory"]; ok {
				mem = q.String()
			}
		}
		switch {
		case !inPlace && (d.Pod != nil || mem != ""):
			t.Errorf("without in-place pod-level resize: pod %v, memory limit %q; want the growth held within the pod level", d.Pod, mem)
		case inPlace && (d.Pod == nil || mem != "1536Mi"):
			t.Errorf("with in-place pod-level resize: pod %v, memory limit %q", d.Pod, mem)
		case inPlace:
			body, err := ResizePatchWithPod(p, d.Changes, d.Pod)
			if err != nil || !strings.Contains(string(body), `"resources":{"requests":{"cpu":"500m","memory":"1536Mi"},"limits":{"memory":"1536Mi"}}`) {
				t.Errorf("patch %s, %v", body, err)
			}
		}
	}
}
