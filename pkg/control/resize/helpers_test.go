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
	b, err := resizeBody(pod, changes)
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

// TestAllocatedPod: a Deferred pod's base is what the kubelet allocated and actuated.
func TestAllocatedPod(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: mcpu(1500), corev1.ResourceMemory: bytes(256 << 20)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: mcpu(1500), corev1.ResourceMemory: bytes(256 << 20)}}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: mcpu(900), corev1.ResourceMemory: bytes(256 << 20)},
			Resources:          &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: mcpu(900), corev1.ResourceMemory: bytes(256 << 20)}}}}}}
	base := allocatedPod(pod)
	r := base.Spec.Containers[0].Resources
	if r.Requests.Cpu().MilliValue() != 900 || r.Limits.Cpu().MilliValue() != 900 {
		t.Fatalf("base %v", r)
	}
	if pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 1500 {
		t.Fatal("allocatedPod modified its input")
	}
	// Capping the Guaranteed pod's 900m → 1500m growth at 1200m keeps limit = request.
	capped, ok := CapTargets(base, specTargets(pod), Resources{MilliCPU: 1200, Bytes: 1 << 30})
	if !ok {
		t.Fatal("cap gave up")
	}
	if c := capped[0]; c.Requests.Cpu().MilliValue() != 1200 || c.Limits.Cpu().MilliValue() != 1200 {
		t.Fatalf("capped %v / %v", c.Requests, c.Limits)
	}
}
