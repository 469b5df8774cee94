package sizing

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// containerRef locates one long-running container of a pod.
type containerRef struct {
	name    string
	sidecar bool // in spec.initContainers
	index   int
}

// longRunning lists a pod's long-running containers in processing order: native
// sidecars, then regular containers, each in spec order (SPEC §6.2, §7.3).
// Run-to-completion init containers and ephemeral containers are never listed.
func longRunning(pod *corev1.Pod) []containerRef {
	var refs []containerRef
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			refs = append(refs, containerRef{name: pod.Spec.InitContainers[i].Name, sidecar: true, index: i})
		}
	}
	for i := range pod.Spec.Containers {
		refs = append(refs, containerRef{name: pod.Spec.Containers[i].Name, index: i})
	}
	return refs
}

// isSidecar reports whether an init container is a native sidecar (restartPolicy Always).
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// container returns the container ref points at in pod, or nil when the pod does not
// have it (wrong index or name).
func (r containerRef) container(pod *corev1.Pod) *corev1.Container {
	list := pod.Spec.Containers
	if r.sidecar {
		list = pod.Spec.InitContainers
	}
	if r.index < 0 || r.index >= len(list) || list[r.index].Name != r.name {
		return nil
	}
	return &list[r.index]
}

func (r containerRef) changes() ContainerChanges {
	return ContainerChanges{Name: r.name, Sidecar: r.sidecar, Index: r.index}
}

func refOf(c ContainerChanges) containerRef {
	return containerRef{name: c.Name, sidecar: c.Sidecar, index: c.Index}
}

// quantity returns list[res] when present, else nil.
func quantity(list corev1.ResourceList, res corev1.ResourceName) *resource.Quantity {
	q, ok := list[res]
	if !ok {
		return nil
	}
	return &q
}

// limitOf returns the container's limit for res, nil when absent or zero: a zero limit
// is no limit (SPEC §7.4 ignores zero quantities).
func limitOf(c *corev1.Container, res corev1.ResourceName) *resource.Quantity {
	q := quantity(c.Resources.Limits, res)
	if q == nil || q.IsZero() {
		return nil
	}
	return q
}

// WithChanges returns a deep copy of pod with changes written into it, and the API
// server's request defaulting applied afterwards (a limit without a request defaults the
// request to the limit), so QoS of the result is what the API server will see. Changes
// that point at no container are ignored.
func WithChanges(pod *corev1.Pod, changes []ContainerChanges) *corev1.Pod {
	out := pod.DeepCopy()
	for _, ch := range changes {
		c := refOf(ch).container(out)
		if c == nil {
			continue
		}
		c.Resources.Requests = merged(c.Resources.Requests, ch.Requests)
		c.Resources.Limits = merged(c.Resources.Limits, ch.Limits)
	}
	for i := range out.Spec.InitContainers {
		defaultRequests(&out.Spec.InitContainers[i])
	}
	for i := range out.Spec.Containers {
		defaultRequests(&out.Spec.Containers[i])
	}
	return out
}

// merged returns base with every entry of over written into it (base is modified when
// non-nil, so pass copies).
func merged(base, over corev1.ResourceList) corev1.ResourceList {
	if len(over) == 0 {
		return base
	}
	if base == nil {
		base = corev1.ResourceList{}
	}
	for k, v := range over {
		base[k] = v.DeepCopy()
	}
	return base
}

// defaultRequests mirrors the API server's pod defaulting: a resource with a limit and no
// request gets the limit as its request.
func defaultRequests(c *corev1.Container) {
	for res, lim := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[res]; ok {
			continue
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		c.Resources.Requests[res] = lim.DeepCopy()
	}
}

// LongRunning returns empty changes addressing each of pod's long-running containers (native
// sidecars, then regular containers, each in spec order; SPEC §6.2, §7.3), for callers
// that build their own changes (the resize controller's fast raises, caps and reverts).
func LongRunning(pod *corev1.Pod) []ContainerChanges {
	refs := longRunning(pod)
	out := make([]ContainerChanges, len(refs))
	for i, r := range refs {
		out[i] = r.changes()
	}
	return out
}

// Container returns the container c addresses in pod (by Sidecar and Index, checked
// against Name), nil when the pod does not have it.
func (c ContainerChanges) Container(pod *corev1.Pod) *corev1.Container {
	return refOf(c).container(pod)
}

// Applied returns the resources of the container ch addresses in pod with ch written into
// them and the API server's request defaulting applied, as WithChanges leaves that
// container, without copying the pod; ok is false when pod has no such container. pod is
// not modified.
func (c ContainerChanges) Applied(pod *corev1.Pod) (r corev1.ResourceRequirements, ok bool) {
	ctr := c.Container(pod)
	if ctr == nil {
		return r, false
	}
	out := corev1.Container{Resources: corev1.ResourceRequirements{
		Requests: merged(ctr.Resources.Requests.DeepCopy(), c.Requests),
		Limits:   merged(ctr.Resources.Limits.DeepCopy(), c.Limits),
	}}
	defaultRequests(&out)
	return out.Resources, true
}
