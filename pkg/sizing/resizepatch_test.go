package sizing

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// applyResizePatch applies a resize patch body the way the API server merges it.
func applyResizePatch(t *testing.T, p *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	doc, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := strategicpatch.StrategicMergePatch(doc, patch, corev1.Pod{})
	if err != nil {
		t.Fatalf("strategic merge patch does not apply: %v\npatch: %s", err, patch)
	}
	var got corev1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func TestResizePatch(t *testing.T) {
	p := pod(
		container("app").req("cpu", "100m", "memory", "200Mi", "ephemeral-storage", "1Gi").lim("memory", "256Mi"),
		container("log").req("cpu", "10m"),
	).init(
		container("migrate").req("cpu", "1"),
		container("proxy").always().req("cpu", "10m", "memory", "32Mi").lim("memory", "64Mi"),
	).obj()
	changes := []ContainerChanges{
		{Name: "proxy", Sidecar: true, Index: 1, Requests: rl("cpu", "20m")},
		{Name: "app", Index: 0, Requests: rl("memory", "178Mi"), Limits: rl("memory", "178Mi")},
	}
	body, err := ResizePatch(p, changes)
	if err != nil {
		t.Fatal(err)
	}
	wantBody := `{"spec":{` +
		`"initContainers":[{"name":"proxy","resources":{"requests":{"cpu":"20m","memory":"32Mi"},"limits":{"memory":"64Mi"}}}],` +
		`"containers":[{"name":"app","resources":{"requests":{"cpu":"100m","ephemeral-storage":"1Gi","memory":"178Mi"},"limits":{"memory":"178Mi"}}}]}}`
	if string(body) != wantBody {
		t.Errorf("body:\n got %s\nwant %s", body, wantBody)
	}

	got := applyResizePatch(t, p, body)
	want := p.DeepCopy()
	want.Spec.InitContainers[1].Resources.Requests["cpu"] = q("20m")
	want.Spec.Containers[0].Resources.Requests["memory"] = q("178Mi")
	want.Spec.Containers[0].Resources.Limits["memory"] = q("178Mi")
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("patched pod (-want +got):\n%s", diff)
	}

	if _, err := ResizePatch(p, []ContainerChanges{{Name: "app", Index: 1, Requests: rl("cpu", "1")}}); err == nil {
		t.Error("a change pointing at the wrong container rendered without error")
	}
}
