// Package discovery tells ballast-node which containers of its node to sample, how often,
// and under which profile their samples are filed.
//
// The pure half (pod.go, resolve.go) turns a Pod object into the agent's view of it (the
// long-running containers joined with their container IDs from pod status, SPEC §6.2) and
// resolves each pod's sampling interval (SPEC §4.1) and measurementHash. The shell
// (watch.go) keeps that view current from informers: the enrolled pods of this node only
// (field selector spec.nodeName, label selector on the mode label), BallastConfig,
// MetricsSources, both policy kinds and WorkloadProfiles (name → measurementHash). It only
// reads from the API server.
package discovery

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/kubeletstats"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Container is one long-running container of an enrolled pod.
type Container struct {
	Name string
	// ID is the container ID from pod status ("containerd://<id>"); empty while the
	// container is not running (waiting, terminated, or not started yet).
	ID string
	// Sidecar marks a restartable init container (restartPolicy Always).
	Sidecar bool
}

// Pod is the agent's view of one enrolled pod of its node.
type Pod struct {
	UID, Namespace, Name string
	Mode                 string
	// QOS is status.qosClass, or the class computed from the spec when status has none.
	QOS string
	// ProfileRef and PolicyRef are the pod's profile-ref and policy-ref annotations.
	ProfileRef, PolicyRef string
	// Labels and Annotations are the pod's, for checking ProfileRef (Resolve).
	Labels, Annotations map[string]string
	// Containers are the long-running containers in spec order: regular containers, then
	// native sidecars. Run-to-completion init containers and ephemeral containers are never
	// listed.
	Containers []Container
	// EmptyDirVolumes names the pod's disk-backed emptyDir volumes (its pod-level series).
	EmptyDirVolumes []string
	Terminating     bool

	// Interval and Hash are filled by Resolve: the sampling interval (SPEC §4.1) and the
	// measurementHash of the profile named by ProfileRef ("" while unknown).
	Interval time.Duration
	Hash     string
	// RefIgnored is set by Resolve when ProfileRef names a profile the pod's own labels
	// and namespace do not resolve to: its samples are held as for an unstamped pod.
	RefIgnored bool
}

// Key is "<namespace>/<name>", the form OOM events and logs use.
func (p Pod) Key() string { return p.Namespace + "/" + p.Name }

// FromPod returns the agent's view of an enrolled pod. ok is false when the pod is not
// enrolled (no mode label, or a value other than measure, apply or resize) or has finished
// (phase Succeeded or Failed), so nothing of it can be sampled.
func FromPod(p *corev1.Pod) (Pod, bool) {
	mode := p.Labels[ballastv1.ModeLabel]
	if !ballastv1.ValidMode(mode) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return Pod{}, false
	}
	out := Pod{
		UID:         string(p.UID),
		Namespace:   p.Namespace,
		Name:        p.Name,
		Mode:        mode,
		QOS:         string(p.Status.QOSClass),
		ProfileRef:  p.Annotations[ballastv1.ProfileRefAnnotation],
		PolicyRef:   p.Annotations[ballastv1.PolicyRefAnnotation],
		Labels:      p.Labels,
		Annotations: p.Annotations,
		Terminating: p.DeletionTimestamp != nil,
	}
	if out.QOS == "" {
		out.QOS = string(qosClass(p))
	}
	// The long-running containers (sizing.LongRunning: native sidecars, then regular
	// containers), each with the ID of its running instance.
	ids := runningIDs(p.Status.ContainerStatuses)
	initIDs := runningIDs(p.Status.InitContainerStatuses)
	for _, r := range sizing.LongRunning(&p.Spec) {
		id := ids[r.Name]
		if r.Sidecar {
			id = initIDs[r.Name]
		}
		out.Containers = append(out.Containers, Container{Name: r.Name, ID: id, Sidecar: r.Sidecar})
	}
	out.EmptyDirVolumes = kubeletstats.DiskEmptyDirs(&p.Spec)
	return out, true
}

// runningIDs maps container name → container ID for containers that may be running: an ID
// is set and the state is neither waiting nor terminated. A terminated container's cgroup
// is gone, so sampling it would only produce errors.
func runningIDs(statuses []corev1.ContainerStatus) map[string]string {
	out := make(map[string]string, len(statuses))
	for _, s := range statuses {
		if s.ContainerID == "" || s.State.Waiting != nil || s.State.Terminated != nil {
			continue
		}
		out[s.Name] = s.ContainerID
	}
	return out
}

// qosClass computes a pod's QoS class from its spec the way the kubelet does (only cpu and
// memory count; init containers included). It is the fallback for a pod whose status does
// not carry the class yet.
func qosClass(p *corev1.Pod) corev1.PodQOSClass {
	var containers []corev1.Container
	containers = append(containers, p.Spec.Containers...)
	containers = append(containers, p.Spec.InitContainers...)
	anySet, guaranteed := false, true
	for _, c := range containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
				anySet = true
			}
			if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !anySet:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}
