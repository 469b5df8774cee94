package sizing

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ContainerRef locates one long-running container of a pod spec.
type ContainerRef struct {
	Name    string
	Sidecar bool // a native sidecar: in spec.initContainers, restartPolicy Always
	Index   int  // its index in spec.initContainers (Sidecar) or spec.containers
}

// LongRunning lists a pod's long-running containers in processing order: native
// sidecars, then regular containers, each in spec order (SPEC §6.2, §7.3).
// Run-to-completion init containers and ephemeral containers are never listed.
//
// It is the one definition of "the containers Ballast samples, records and sizes": the
// calculator, the resize controller, the metrics fallback, the node agent's discovery and
// kubectl ballast all list containers through it (docs/design-notes.md, issue 32).
func LongRunning(spec *corev1.PodSpec) []ContainerRef {
	var refs []ContainerRef
	for i := range spec.InitContainers {
		if IsSidecar(&spec.InitContainers[i]) {
			refs = append(refs, ContainerRef{Name: spec.InitContainers[i].Name, Sidecar: true, Index: i})
		}
	}
	for i := range spec.Containers {
		refs = append(refs, ContainerRef{Name: spec.Containers[i].Name, Index: i})
	}
	return refs
}

// IsSidecar reports whether an init container is a native sidecar (restartPolicy Always):
// long-running, unlike a run-to-completion init container.
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Container returns the container r points at in spec, or nil when the spec does not have
// it (wrong index or name).
func (r ContainerRef) Container(spec *corev1.PodSpec) *corev1.Container {
	list := spec.Containers
	if r.Sidecar {
		list = spec.InitContainers
	}
	if r.Index < 0 || r.Index >= len(list) || list[r.Index].Name != r.Name {
		return nil
	}
	return &list[r.Index]
}

// Changes returns empty changes addressing the container r points at.
func (r ContainerRef) Changes() ContainerChanges {
	return ContainerChanges{Name: r.Name, Sidecar: r.Sidecar, Index: r.Index}
}

func refOf(c ContainerChanges) ContainerRef {
	return ContainerRef{Name: c.Name, Sidecar: c.Sidecar, Index: c.Index}
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
		c := refOf(ch).Container(&out.Spec)
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

// LongRunningChanges returns empty changes addressing each of pod's long-running
// containers (LongRunning's list and order), for callers that build their own changes (the
// resize controller's fast raises, caps and reverts).
func LongRunningChanges(pod *corev1.Pod) []ContainerChanges {
	refs := LongRunning(&pod.Spec)
	out := make([]ContainerChanges, len(refs))
	for i, r := range refs {
		out[i] = r.Changes()
	}
	return out
}

// Container returns the container c addresses in pod (by Sidecar and Index, checked
// against Name), nil when the pod does not have it.
func (c ContainerChanges) Container(pod *corev1.Pod) *corev1.Container {
	return refOf(c).Container(&pod.Spec)
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
