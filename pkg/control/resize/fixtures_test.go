package resize

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func mcpu(v int64) resource.Quantity  { return *resource.NewMilliQuantity(v, resource.DecimalSI) }
func bytes(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.BinarySI) }

func req(cpu, mem int64) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mcpu(cpu), corev1.ResourceMemory: bytes(mem << 20)}}
}

const deferredMsg = "Node didn't have enough resource: cpu, requested: 1500, used: 900, capacity: 2000"
