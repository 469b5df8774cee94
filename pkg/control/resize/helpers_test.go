package resize

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

func TestAtLeast137(t *testing.T) {
	for v, want := range map[string]bool{"v1.37.2": true, "v1.37.0-rc.1": true, "v1.38.0": true, "v2.0.0": true,
		"v1.36.4": false, "v1.35.0+k3s1": false, "": true, "garbage": true} {
		if got := atLeast137(v); got != want {
			t.Errorf("atLeast137(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestGuardKeys(t *testing.T) {
	n := &corev1.Node{Spec: corev1.NodeSpec{PodPreemptionPolicy: &corev1.NodePodPreemptionPolicy{
		DisableResizePreemption: []string{"ops.example.com/freeze", ballastv1.ResizeGuardKey}}}}
	ours, others := guardKeys(n)
	if !ours || !cmp.Equal(others, []string{"ops.example.com/freeze"}) {
		t.Fatalf("guardKeys = %v %v", ours, others)
	}
	if ours, others := guardKeys(&corev1.Node{}); ours || others != nil {
		t.Fatalf("empty node: %v %v", ours, others)
	}
}

// TestResizeBody: the pods/resize patch carries the resourceVersion precondition and the
// full resources of each changed container, sidecars under spec.initContainers.
func TestResizeBody(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "42"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: req(100, 64)}},
		Containers:     []corev1.Container{{Name: "app", Resources: req(500, 256)}},
	}}
	changes := []sizing.ContainerChanges{
		{Name: "side", Sidecar: true, Requests: corev1.ResourceList{corev1.ResourceCPU: mcpu(50)}},
		{Name: "app", Index: 0, Requests: corev1.ResourceList{corev1.ResourceMemory: bytes(128 << 20)}},
	}
	b, err := resizeBody(pod, changes, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"metadata": map[string]any{"resourceVersion": "42"},
		"spec": map[string]any{
			"initContainers": []any{map[string]any{"name": "side", "resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}}},
			"containers":     []any{map[string]any{"name": "app", "resources": map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "128Mi"}}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
}
