package ballast

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.yaml.in/yaml/v3"

	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// manifestKind says where a kind keeps its pod template and what its pods' direct
// controller is (the kinds policy selectors see, SPEC §3.4).
type manifestKind struct {
	template []string // keys from the object to the pod template (metadata + spec); none for Pod
	ctrlKind string
}

var manifestKinds = map[string]manifestKind{
	"Deployment":  {[]string{"spec", "template"}, "ReplicaSet"},
	"StatefulSet": {[]string{"spec", "template"}, "StatefulSet"},
	"DaemonSet":   {[]string{"spec", "template"}, "DaemonSet"},
	"ReplicaSet":  {[]string{"spec", "template"}, "ReplicaSet"},
	"Job":         {[]string{"spec", "template"}, "Job"},
	"CronJob":     {[]string{"spec", "jobTemplate", "spec", "template"}, "Job"},
	"Pod":         {nil, ""},
}

// sizer plans the recommended resources into parsed files.
type sizer struct {
	src       recSource
	namespace string // for objects without metadata.namespace
}

func scalar(n *yaml.Node, keys ...string) string {
	if v := path(n, keys...); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// decodeInto decodes a node (aliases and merge keys resolved) into a typed object through
// JSON, so the object's own JSON field names apply.
func decodeInto(n *yaml.Node, out any) error {
	if n == nil {
		return nil
	}
	var raw any
	if err := n.Decode(&raw); err != nil {
		return err
	}
	js, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(js, out)
}

// sizeManifests plans every workload document of f.
func (s *sizer) sizeManifests(ctx context.Context, f *yamlFile) error {
	for _, d := range f.Docs {
		root := docRoot(d)
		if root == nil || root.Kind != yaml.MappingNode {
			continue
		}
		if err := s.sizeObject(ctx, f, root); err != nil {
			return err
		}
	}
	return nil
}

func (s *sizer) sizeObject(ctx context.Context, f *yamlFile, obj *yaml.Node) error {
	kind := scalar(obj, "kind")
	if items := path(obj, "items"); strings.HasSuffix(kind, "List") && items != nil && items.Kind == yaml.SequenceNode {
		for _, it := range items.Content {
			if err := s.sizeObject(ctx, f, resolve(it)); err != nil {
				return err
			}
		}
		return nil
	}
	ns := scalar(obj, "metadata", "namespace")
	if ns == "" {
		ns = s.namespace
	}
	id := fmt.Sprintf("%s %s/%s", kind, ns, scalar(obj, "metadata", "name"))
	wk, ok := manifestKinds[kind]
	switch {
	case kind == "" || kind == "Kustomization":
		return nil
	case !ok:
		f.note("%s (line %d): skipped, not a workload kind Ballast sizes", id, obj.Line)
		return nil
	}
	tmpl := obj
	if wk.template != nil {
		tmpl = path(obj, wk.template...)
	}
	specNode := path(tmpl, "spec")
	if specNode == nil {
		f.note("%s: no pod template; skipped", id)
		return nil
	}
	var meta metav1.ObjectMeta
	var spec corev1.PodSpec
	if err := decodeInto(path(tmpl, "metadata"), &meta); err != nil {
		f.note("%s: pod template metadata does not decode (%v); skipped", id, err)
		return nil
	}
	if err := decodeInto(specNode, &spec); err != nil {
		f.note("%s: pod spec does not decode (%v); skipped", id, err)
		return nil
	}
	facts := policy.PodFacts{Namespace: ns, Labels: meta.Labels, Annotations: meta.Annotations, Kind: kind, ControllerKind: wk.ctrlKind}
	wp, params, why, err := s.src.forTemplate(ctx, facts)
	if err != nil {
		return err
	}
	if wp == nil {
		f.note("%s: %s; left as written", id, why)
		return nil
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: meta.Labels, Annotations: meta.Annotations}, Spec: spec}
	recs, problems := sizing.ParseRecommendations(wp.Status.Containers)
	for _, p := range problems {
		f.note("%s: profile %s: %s", id, wp.Name, p)
	}
	for _, c := range longRunning(&spec) {
		if _, ok := recs[c.Name]; !ok {
			f.note("%s: container %s: profile %s has no recommendation for it; left as written", id, c.Name, wp.Name)
		}
	}
	res := sizing.AdmissionResult(sizing.Calculate(pod, recs, params, sizing.AtOnce))
	if len(res.Pinned) > 0 {
		f.note("%s: container(s) %s left as written: the change would move the pod out of its QoS class %s",
			id, strings.Join(res.Pinned, ", "), sizing.QoS(pod))
	}
	for _, ch := range res.Changes {
		list := "containers"
		if ch.Sidecar {
			list = "initContainers"
		}
		seq, seqVia := lookup(specNode, list)
		if seq == nil || seq.Kind != yaml.SequenceNode || ch.Index >= len(seq.Content) {
			f.note("%s: container %s not found in %s; left as written", id, ch.Name, list)
			continue
		}
		var claims []claim
		if seqVia != nil {
			claims = append(claims, claim{anchor: seqVia.Alias, use: seqVia})
		} else if seq.Anchor != "" {
			claims = append(claims, claim{anchor: seq, use: seq})
		}
		item := seq.Content[ch.Index]
		var via *yaml.Node
		if item.Kind == yaml.AliasNode {
			via = item
		}
		f.set(item, via, []kv{{key: "resources", children: resourcesKV(ch.Requests, ch.Limits)}}, claims, id+" container "+ch.Name)
	}
	return nil
}

// resourcesKV renders written values as requests then limits, each cpu, memory,
// ephemeral-storage.
func resourcesKV(requests, limits corev1.ResourceList) []kv {
	var out []kv
	if len(requests) > 0 {
		out = append(out, kv{key: "requests", children: quantitiesKV(requests)})
	}
	if len(limits) > 0 {
		out = append(out, kv{key: "limits", children: quantitiesKV(limits)})
	}
	return out
}

func quantitiesKV(l corev1.ResourceList) []kv {
	order := map[corev1.ResourceName]int{corev1.ResourceCPU: 0, corev1.ResourceMemory: 1, corev1.ResourceEphemeralStorage: 2}
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
	var out []kv
	for _, n := range names {
		q := l[n]
		out = append(out, kv{key: string(n), value: quantityText(q)})
	}
	return out
}

func quantityText(q resource.Quantity) string { return q.String() }
