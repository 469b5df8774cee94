package ballast

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.yaml.in/yaml/v3"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

// helmTarget is what one `resources:` of a values file sizes: a container of a profile.
type helmTarget struct{ profile, container string }

// parseHelmKeys reads --helm-key PATH=[PROFILE/]CONTAINER entries.
func parseHelmKeys(entries []string, defaultProfile string) (map[string]helmTarget, error) {
	out := map[string]helmTarget{}
	for _, e := range entries {
		p, t, ok := strings.Cut(e, "=")
		if !ok || p == "" || t == "" {
			return nil, usageError("--helm-key %q: want PATH=[PROFILE/]CONTAINER, e.g. server.resources=app", e)
		}
		prof, ctr, hasProf := strings.Cut(t, "/")
		if !hasProf {
			prof, ctr = defaultProfile, t
		}
		if prof == "" {
			return nil, usageError("--helm-key %q names no profile and there is no --helm-profile", e)
		}
		out[p] = helmTarget{profile: prof, container: ctr}
	}
	return out, nil
}

// helmSpot is one `resources` key found in a values file.
type helmSpot struct {
	path      string     // dotted path of the resources key, list items as [i]
	parent    *yaml.Node // the mapping holding it
	container string     // by the matching rule, empty when none applies
}

// helmSpots walks a values tree for `resources` keys whose value is a mapping or empty.
// The container a spot sizes is, by default, the `name` of the mapping that holds it (a
// list of containers: `- name: envoy` / `resources:`), else the key that mapping sits
// under (`api:` / `resources:`); a top-level `resources` has neither and needs --helm-key.
func helmSpots(root *yaml.Node) []helmSpot {
	var out []helmSpot
	var walk func(n *yaml.Node, p string, under string)
	walk = func(n *yaml.Node, p string, under string) {
		// An alias repeats what its anchor holds, which is walked where it is written.
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], resolve(n.Content[i+1])
				kp := joinPath(p, k.Value)
				if k.Value == "resources" && (v.Kind == yaml.MappingNode || v.Tag == "!!null") {
					ctr := scalar(n, "name")
					if ctr == "" {
						ctr = under
					}
					out = append(out, helmSpot{path: kp, parent: n, container: ctr})
					continue
				}
				walk(n.Content[i+1], kp, k.Value)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, p+"["+strconv.Itoa(i)+"]", "")
			}
		}
	}
	walk(root, "", "")
	return out
}

func joinPath(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

// sizeHelmValues plans the recommended resources into a values file: each `resources`
// map is a container's, sized as a pod of that one container (its QoS class is the class
// of that resources block alone).
func (s *sizer) sizeHelmValues(ctx context.Context, f *yamlFile, defaultProfile string, keys map[string]helmTarget) error {
	used := map[string]bool{}
	for _, d := range f.Docs {
		root := docRoot(d)
		if root == nil {
			continue
		}
		for _, sp := range helmSpots(root) {
			t, explicit := keys[sp.path]
			used[sp.path] = explicit
			if !explicit {
				if sp.container == "" || defaultProfile == "" {
					f.note("%s (line %d): no container for it; name one with --helm-key %s=[PROFILE/]CONTAINER", sp.path, sp.parent.Line, sp.path)
					continue
				}
				t = helmTarget{profile: defaultProfile, container: sp.container}
			}
			if err := s.sizeHelmSpot(ctx, f, sp, t); err != nil {
				return err
			}
		}
	}
	for p := range keys {
		if !used[p] {
			f.note("--helm-key %s: no resources key at that path", p)
		}
	}
	return nil
}

func (s *sizer) sizeHelmSpot(ctx context.Context, f *yamlFile, sp helmSpot, t helmTarget) error {
	id := fmt.Sprintf("%s (container %s of profile %s)", sp.path, t.container, t.profile)
	wp, params, why, err := s.src.byName(ctx, t.profile)
	if err != nil {
		return err
	}
	if wp == nil {
		f.note("%s: %s; left as written", id, why)
		return nil
	}
	recs, _ := sizing.ParseRecommendations(wp.Status.Containers)
	if _, ok := recs[t.container]; !ok {
		f.note("%s: profile %s has no recommendation for container %s; left as written", id, wp.Name, t.container)
		return nil
	}
	resNode, _ := lookup(sp.parent, "resources")
	var rr corev1.ResourceRequirements
	if err := decodeInto(resNode, &rr); err != nil {
		f.note("%s: resources do not decode (%v); left as written", id, err)
		return nil
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: t.container}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: t.container, Resources: rr}}}}
	res := sizing.AdmissionResult(sizing.Calculate(pod, recs, params, sizing.AtOnce))
	if len(res.Pinned) > 0 {
		f.note("%s: left as written: the change would move it out of its QoS class %s", id, sizing.QoS(pod))
	}
	for _, ch := range res.Changes {
		f.set(sp.parent, nil, []kv{{key: "resources", children: resourcesKV(ch.Requests, ch.Limits)}}, nil, sp.path)
	}
	return nil
}
