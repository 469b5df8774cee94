package sizing

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ResizePatch renders resize changes as a strategic-merge-patch body for the pods/resize
// subresource (SPEC §8.3–§8.4): each adjusted container, merged by name, carries its full
// current requests and limits with the changed fields overridden; native sidecars go
// under spec.initContainers. Containers without changes are left out.
func ResizePatch(pod *corev1.Pod, changes []ContainerChanges) ([]byte, error) {
	return ResizePatchWithPod(pod, changes, nil)
}

// ResizePatchWithPod is ResizePatch plus the pod-level spec.resources of pp (policy
// podLevel: size) when pp changes them.
func ResizePatchWithPod(pod *corev1.Pod, changes []ContainerChanges, pp *PodPlan) ([]byte, error) {
	var spec resizeSpec
	if pp != nil && pp.Changed {
		spec.Resources = &resizeResources{Requests: pp.Requests, Limits: pp.Limits}
	}
	for _, ch := range changes {
		if ch.empty() {
			continue
		}
		c := refOf(ch).Container(&pod.Spec)
		if c == nil {
			return nil, fmt.Errorf("rendering resize patch: pod has no container %q at %s", ch.Name, containerPath(ch))
		}
		rc := resizeContainer{Name: c.Name, Resources: resizeResources{
			Requests: merged(c.Resources.Requests.DeepCopy(), ch.Requests),
			Limits:   merged(c.Resources.Limits.DeepCopy(), ch.Limits),
		}}
		if ch.Sidecar {
			spec.InitContainers = append(spec.InitContainers, rc)
		} else {
			spec.Containers = append(spec.Containers, rc)
		}
	}
	body, err := json.Marshal(resizeBody{Spec: spec})
	if err != nil {
		return nil, fmt.Errorf("rendering resize patch: %w", err)
	}
	return body, nil
}

type resizeBody struct {
	Spec resizeSpec `json:"spec"`
}

type resizeSpec struct {
	Resources      *resizeResources  `json:"resources,omitempty"`
	InitContainers []resizeContainer `json:"initContainers,omitempty"`
	Containers     []resizeContainer `json:"containers,omitempty"`
}

type resizeContainer struct {
	Name      string          `json:"name"`
	Resources resizeResources `json:"resources"`
}

type resizeResources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
}
