package resizeplan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestAllocatedPod: a Deferred pod's base is what the kubelet allocated and actuated.
func TestAllocatedPod(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: mcpu(1500), corev1.ResourceMemory: bytes(256 << 20)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: mcpu(1500), corev1.ResourceMemory: bytes(256 << 20)}}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: mcpu(900), corev1.ResourceMemory: bytes(256 << 20)},
			Resources:          &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: mcpu(900), corev1.ResourceMemory: bytes(256 << 20)}}}}}}
	base := AllocatedPod(pod)
	r := base.Spec.Containers[0].Resources
	if r.Requests.Cpu().MilliValue() != 900 || r.Limits.Cpu().MilliValue() != 900 {
		t.Fatalf("base %v", r)
	}
	if pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 1500 {
		t.Fatal("allocatedPod modified its input")
	}
	// Capping the Guaranteed pod's 900m → 1500m growth at 1200m keeps limit = request.
	capped, ok := CapTargets(base, SpecTargets(pod), Resources{MilliCPU: 1200, Bytes: 1 << 30})
	if !ok {
		t.Fatal("cap gave up")
	}
	if c := capped[0]; c.Requests.Cpu().MilliValue() != 1200 || c.Limits.Cpu().MilliValue() != 1200 {
		t.Fatalf("capped %v / %v", c.Requests, c.Limits)
	}
}
