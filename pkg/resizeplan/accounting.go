package resizeplan

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Resources are the two resizable amounts in whole units.
type Resources struct {
	MilliCPU int64
	Bytes    int64
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{MilliCPU: r.MilliCPU + o.MilliCPU, Bytes: r.Bytes + o.Bytes}
}

// Sub returns r − o.
func (r Resources) Sub(o Resources) Resources {
	return Resources{MilliCPU: r.MilliCPU - o.MilliCPU, Bytes: r.Bytes - o.Bytes}
}

// Max is the per-resource maximum.
func (r Resources) Max(o Resources) Resources {
	return Resources{MilliCPU: max(r.MilliCPU, o.MilliCPU), Bytes: max(r.Bytes, o.Bytes)}
}

// Min is the per-resource minimum.
func (r Resources) Min(o Resources) Resources {
	return Resources{MilliCPU: min(r.MilliCPU, o.MilliCPU), Bytes: min(r.Bytes, o.Bytes)}
}

// Positive clears negative amounts.
func (r Resources) Positive() Resources { return r.Max(Resources{}) }

// Fits reports whether every amount of r is at most the one of o.
func (r Resources) Fits(o Resources) bool { return r.MilliCPU <= o.MilliCPU && r.Bytes <= o.Bytes }

// IsZero reports whether both amounts are zero.
func (r Resources) IsZero() bool { return r == Resources{} }

// FromList reads cpu and memory of a resource list.
func FromList(l corev1.ResourceList) Resources {
	var r Resources
	if q, ok := l[corev1.ResourceCPU]; ok {
		r.MilliCPU = q.MilliValue()
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		r.Bytes = q.Value()
	}
	return r
}

// List renders r as a resource list.
func (r Resources) List() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(r.Bytes, resource.BinarySI),
	}
}

// Accounted is what a pod holds on its node the way the kubelet and the scheduler count
// it during in-place resizes: per container the maximum of the spec request, the
// allocated resources and the actual resources in status; long-running containers
// (regular and native sidecars) summed, at least the largest run-to-completion init
// container plus the sidecars declared before it; plus the pod overhead. overrides
// replaces spec requests by container name; nil for none.
func Accounted(pod *corev1.Pod, overrides map[string]corev1.ResourceList) Resources {
	return account(pod, overrides, true)
}

// Planned is what a pod will hold once a proposed resize (overrides, by container name)
// is actuated: the kubelet's allocated and actual resources then equal the spec, so only
// the spec counts.
func Planned(pod *corev1.Pod, overrides map[string]corev1.ResourceList) Resources {
	return account(pod, overrides, false)
}

func account(pod *corev1.Pod, overrides map[string]corev1.ResourceList, withStatus bool) Resources {
	// Containers are few: a linear scan of the statuses allocates nothing.
	status := func(name string) *corev1.ContainerStatus {
		if !withStatus {
			return nil
		}
		for _, list := range [2][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
			for i := range list {
				if list[i].Name == name {
					return &list[i]
				}
			}
		}
		return nil
	}
	one := func(c *corev1.Container) Resources {
		spec := c.Resources.Requests
		if o, ok := overrides[c.Name]; ok {
			spec = o
		}
		r := FromList(spec)
		if s := status(c.Name); s != nil {
			r = r.Max(FromList(s.AllocatedResources))
			if s.Resources != nil {
				r = r.Max(FromList(s.Resources.Requests))
			}
		}
		return r
	}
	var sum, sidecars, initMax Resources
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if sizing.IsSidecar(c) {
			r := one(c)
			sum, sidecars = sum.Add(r), sidecars.Add(r)
			continue
		}
		initMax = initMax.Max(one(c).Add(sidecars))
	}
	for i := range pod.Spec.Containers {
		sum = sum.Add(one(&pod.Spec.Containers[i]))
	}
	return sum.Max(initMax).Add(FromList(pod.Spec.Overhead))
}

// Counted reports whether a pod occupies its node: bound and not terminal.
func Counted(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}
