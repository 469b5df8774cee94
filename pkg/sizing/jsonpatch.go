package sizing

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Operation is one RFC 6902 JSON patch operation. It marshals to the shape admission
// responses carry ({"op","path","value"}).
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// JSONPatch renders an admission Result as RFC 6902 operations against pod (the object
// the webhook received). bookkeeping holds the annotations every enrolled pod gets in the
// same patch (profile-ref, policy-ref); it may be nil. Annotations already carrying the
// same value are not written. Maps absent from the pod (annotations, resources.requests,
// resources.limits, or resources altogether) are created by the operation that adds them;
// annotation keys are escaped ("/" ⇒ "~1"). Operations come in a fixed order: containers
// as in result.Changes, requests before limits, resources and annotations sorted by name.
// An empty result with no bookkeeping yields no operations.
func JSONPatch(pod *corev1.Pod, result Result, bookkeeping map[string]string) ([]Operation, error) {
	var ops []Operation
	for _, ch := range result.Changes {
		c := refOf(ch).Container(&pod.Spec)
		if c == nil {
			return nil, fmt.Errorf("rendering json patch: pod has no container %q at %s", ch.Name, containerPath(ch))
		}
		ops = append(ops, containerOps(c, ch)...)
	}
	if result.Pod != nil && result.Pod.Changed && pod.Spec.Resources != nil {
		ops = append(ops, podLevelOps(pod.Spec.Resources, result.Pod)...)
	}
	ops = append(ops, annotationOps(pod.Annotations, result.Annotations, bookkeeping)...)
	return ops, nil
}

// podLevelOps writes the pod-level requests and limits that differ from pr.
func podLevelOps(pr *corev1.ResourceRequirements, pp *PodPlan) []Operation {
	var ops []Operation
	for _, side := range [...]struct {
		name          string
		existing, set corev1.ResourceList
	}{{"requests", pr.Requests, pp.Requests}, {"limits", pr.Limits, pp.Limits}} {
		for _, res := range sortedResources(side.set) {
			v := side.set[res]
			if cur, ok := side.existing[res]; ok && cur.Cmp(v) == 0 {
				continue
			}
			// pp only carries resources the author set, so the map and key exist.
			ops = append(ops, Operation{Op: "replace", Path: "/spec/resources/" + side.name + "/" + escape(string(res)), Value: v.DeepCopy()})
		}
	}
	return ops
}

func containerPath(ch ContainerChanges) string {
	list := "containers"
	if ch.Sidecar {
		list = "initContainers"
	}
	return fmt.Sprintf("/spec/%s/%d", list, ch.Index)
}

func containerOps(c *corev1.Container, ch ContainerChanges) []Operation {
	if ch.empty() {
		return nil
	}
	base := containerPath(ch) + "/resources"
	if len(c.Resources.Requests) == 0 && len(c.Resources.Limits) == 0 {
		// resources may be absent from the received JSON: add it whole, keeping any claims.
		r := c.Resources.DeepCopy()
		r.Requests = merged(nil, ch.Requests)
		r.Limits = merged(nil, ch.Limits)
		return []Operation{{Op: "add", Path: base, Value: r}}
	}
	var ops []Operation
	for _, side := range [...]struct {
		name          string
		existing, set corev1.ResourceList
	}{{"requests", c.Resources.Requests, ch.Requests}, {"limits", c.Resources.Limits, ch.Limits}} {
		if len(side.set) == 0 {
			continue
		}
		if len(side.existing) == 0 {
			ops = append(ops, Operation{Op: "add", Path: base + "/" + side.name, Value: merged(nil, side.set)})
			continue
		}
		for _, res := range sortedResources(side.set) {
			op := "add"
			if _, ok := side.existing[res]; ok {
				op = "replace"
			}
			v := side.set[res]
			ops = append(ops, Operation{Op: op, Path: base + "/" + side.name + "/" + escape(string(res)), Value: v.DeepCopy()})
		}
	}
	return ops
}

func annotationOps(existing map[string]string, sets ...map[string]string) []Operation {
	want := map[string]string{}
	for _, set := range sets {
		for k, v := range set {
			if cur, ok := existing[k]; !ok || cur != v {
				want[k] = v
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	if len(existing) == 0 {
		return []Operation{{Op: "add", Path: "/metadata/annotations", Value: want}}
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ops := make([]Operation, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, Operation{Op: "add", Path: "/metadata/annotations/" + escape(k), Value: want[k]})
	}
	return ops
}

// escape encodes one JSON pointer reference token (RFC 6901): "~" ⇒ "~0", "/" ⇒ "~1".
func escape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

func sortedResources(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
