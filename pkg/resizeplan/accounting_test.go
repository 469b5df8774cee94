package resizeplan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func req(cpu, mem int64) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mcpu(cpu), corev1.ResourceMemory: bytes(mem << 20)}}
}

func TestAccounted(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "sidecar", RestartPolicy: always, Resources: req(100, 64)},
			{Name: "migrate", Resources: req(3000, 16)},
		},
		Containers: []corev1.Container{{Name: "app", Resources: req(400, 256)}, {Name: "log", Resources: req(50, 32)}},
		Overhead:   corev1.ResourceList{corev1.ResourceCPU: mcpu(10)},
	}}
	// Long-running: 100+400+50 = 550m, 352Mi; the init container needs 3000m + the sidecar
	// before it (100m) = 3100m, 80Mi. Overhead 10m.
	if got, want := Accounted(p, nil), r(3110, 352); got != want {
		t.Fatalf("spec only: %+v, want %+v", got, want)
	}
	p.Spec.InitContainers = p.Spec.InitContainers[:1]
	// The app was resized down to 200m in spec, but the kubelet still holds 400m allocated,
	// and actual memory is 300Mi above the 256Mi spec.
	p.Spec.Containers[0].Resources = req(200, 256)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: mcpu(400), corev1.ResourceMemory: bytes(256 << 20)},
		Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mcpu(200), corev1.ResourceMemory: bytes(300 << 20)}}}}
	if got, want := Accounted(p, nil), r(560, 396); got != want {
		t.Fatalf("status: %+v, want %+v", got, want)
	}
	// A proposal replaces the spec request, still under the max with status.
	if got, want := Accounted(p, map[string]corev1.ResourceList{"app": req(900, 128).Requests}), r(1060, 396); got != want {
		t.Fatalf("override: %+v, want %+v", got, want)
	}
	// Once actuated, only the spec counts: the shrink to 100m frees what the kubelet held.
	if got, want := Planned(p, map[string]corev1.ResourceList{"app": req(100, 128).Requests}), r(260, 224); got != want {
		t.Fatalf("planned: %+v, want %+v", got, want)
	}
}
