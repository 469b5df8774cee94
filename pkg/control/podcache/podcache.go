// Package podcache keeps ballast-control's cached pods small: the manager's cache (enrolled
// pods, Slim) and Understudy's (the other pods, Placement) hold each pod with only the
// fields some controller or webhook of ballast-control reads, and equal resource lists are
// shared across pods, so the control plane's memory follows what it needs per pod, not what
// the pod's authors wrote into it. Cached WorkloadProfiles keep every field and share the
// strings they repeat (Profile).
//
// A slim pod is for reading. Nothing in ballast-control sends a cached pod back to the API
// server whole: every pod write is a patch built from explicit fields (annotations, the
// resize subresource), so the fields left out here are never cleared on the server.
package podcache

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// lastApplied is kubectl's copy of the whole object, as large as the pod spec; nothing in
// ballast-control reads it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Slim is a cache TransformFunc (cache.ByObject.Transform): pods lose managedFields and
// every field ballast-control does not read; other objects pass unchanged. It edits the
// object in place (the informer's own freshly decoded copy) and is idempotent.
//
// Kept: metadata (less managedFields and the last-applied annotation); the spec's node,
// priority, preemption policy, overhead, readiness gates, restart policy, emptyDir volumes
// (the fallback sums disk-backed ones) and, per container, name, resources, resize and
// restart policy; the status's phase, the conditions read (Ready, the resize conditions,
// the readiness gates'), QoS class, resize and per container name, state, last state,
// readiness, restarts, resources and allocations. Label and annotation strings are
// interned: replicas and pods of one profile repeat them.
func Slim(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	stripMeta(pod)
	pod.Spec = slimSpec(pod.Spec)
	pod.Status = slimStatus(pod.Status, pod.Spec.ReadinessGates)
	internLists(pod)
	return pod, nil
}

// Placement is the transform of Understudy's cache, which holds every pod of the cluster
// and reads only whose pod it is, where it runs and whether it is Ready: metadata (less
// managedFields and the last-applied annotation, strings interned), the node, readiness
// gates, phase and the conditions read (as Slim).
func Placement(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	stripMeta(pod)
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName, ReadinessGates: pod.Spec.ReadinessGates}
	pod.Status = corev1.PodStatus{Phase: pod.Status.Phase, Conditions: readConditions(pod.Status.Conditions, pod.Spec.ReadinessGates),
		Reason: pod.Status.Reason}
	return pod, nil
}

// stripMeta drops the metadata no reader uses, managedFields and kubectl's last-applied
// copy, and shares equal label and annotation maps between pods (stringMaps), their
// strings interned.
func stripMeta(pod *corev1.Pod) {
	pod.ManagedFields = nil
	delete(pod.Annotations, lastApplied)
	pod.Labels = stringMaps.share(pod.Labels)
	pod.Annotations = stringMaps.share(pod.Annotations)
}

// readConditions keeps the pod conditions ballast-control reads: Ready (resize's revert
// check, Understudy's stand-in), PodResizePending and PodResizeInProgress (resize
// outcomes) and each readiness gate's (Understudy). The kubelet's others (PodScheduled,
// Initialized, ContainersReady, PodReadyToStartContainers, DisruptionTarget) are about a
// sixth of a slim pod and nobody reads them.
func readConditions(cs []corev1.PodCondition, gates []corev1.PodReadinessGate) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range cs {
		switch c.Type {
		case corev1.PodReady, corev1.PodResizePending, corev1.PodResizeInProgress:
		default:
			if !slices.ContainsFunc(gates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == c.Type }) {
				continue
			}
		}
		c.Type, c.Status = corev1.PodConditionType(intern(string(c.Type))), corev1.ConditionStatus(intern(string(c.Status)))
		out = append(out, c)
	}
	return out
}

// each returns f of every element, nil for nil.
func each[T any](in []T, f func(T) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func slimSpec(s corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{
		NodeName:          s.NodeName,
		Priority:          s.Priority,
		PriorityClassName: s.PriorityClassName,
		PreemptionPolicy:  s.PreemptionPolicy,
		Overhead:          s.Overhead,
		ReadinessGates:    s.ReadinessGates,
		RestartPolicy:     s.RestartPolicy,
		Resources:         s.Resources, // pod-level resources
		Containers:        slimContainers(s.Containers),
		InitContainers:    slimContainers(s.InitContainers),
	}
	for _, v := range s.Volumes {
		if v.EmptyDir != nil {
			out.Volumes = append(out.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{EmptyDir: v.EmptyDir}})
		}
	}
	return out
}

func slimContainers(cs []corev1.Container) []corev1.Container {
	return each(cs, func(c corev1.Container) corev1.Container {
		return corev1.Container{Name: c.Name, Resources: c.Resources, ResizePolicy: c.ResizePolicy, RestartPolicy: c.RestartPolicy}
	})
}

func slimStatus(s corev1.PodStatus, gates []corev1.PodReadinessGate) corev1.PodStatus {
	out := corev1.PodStatus{
		Phase:      s.Phase,
		Conditions: readConditions(s.Conditions, gates),
		Reason:     s.Reason,
		Message:    s.Message,
		QOSClass:   s.QOSClass,
		Resize:     s.Resize, //nolint:staticcheck // still set by older kubelets
		StartTime:  s.StartTime,
		Resources:  s.Resources,

		AllocatedResources: s.AllocatedResources,

		ObservedGeneration:    s.ObservedGeneration,
		ContainerStatuses:     slimStatuses(s.ContainerStatuses),
		InitContainerStatuses: slimStatuses(s.InitContainerStatuses),
	}
	return out
}

func slimStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	return each(ss, func(s corev1.ContainerStatus) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: s.Name, State: s.State, LastTerminationState: s.LastTerminationState,
			Ready: s.Ready, Started: s.Started, RestartCount: s.RestartCount,
			Resources: s.Resources, AllocatedResources: s.AllocatedResources}
	})
}
