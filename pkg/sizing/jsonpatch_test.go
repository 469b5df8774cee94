package sizing

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// applyJSONPatch is a strict RFC 6902 applier for the operations JSONPatch emits (add,
// replace): the parent of every path must exist, and replace needs an existing member.
func applyJSONPatch(doc []byte, ops []Operation) ([]byte, error) {
	var root any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	for _, op := range ops {
		raw, err := json.Marshal(op.Value)
		if err != nil {
			return nil, err
		}
		var value any
		if err := json.Unmarshal(raw, &value); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(op.Path, "/") {
			return nil, fmt.Errorf("%s: path must start with /", op.Path)
		}
		tokens := strings.Split(op.Path[1:], "/")
		for i, tok := range tokens {
			tokens[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		}
		parent := root
		for _, tok := range tokens[:len(tokens)-1] {
			switch node := parent.(type) {
			case map[string]any:
				next, ok := node[tok]
				if !ok {
					return nil, fmt.Errorf("%s %s: parent member %q does not exist", op.Op, op.Path, tok)
				}
				parent = next
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(node) {
					return nil, fmt.Errorf("%s %s: bad index %q", op.Op, op.Path, tok)
				}
				parent = node[i]
			default:
				return nil, fmt.Errorf("%s %s: parent is not a container", op.Op, op.Path)
			}
		}
		obj, ok := parent.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s %s: target parent is not an object", op.Op, op.Path)
		}
		last := tokens[len(tokens)-1]
		switch op.Op {
		case "add":
		case "replace":
			if _, ok := obj[last]; !ok {
				return nil, fmt.Errorf("replace %s: member does not exist", op.Path)
			}
		default:
			return nil, fmt.Errorf("unexpected op %q", op.Op)
		}
		obj[last] = value
	}
	return json.Marshal(root)
}

// expectedAfter is pod with result and bookkeeping written in (no API server defaulting).
func expectedAfter(p *corev1.Pod, res Result, bookkeeping map[string]string) *corev1.Pod {
	out := p.DeepCopy()
	for _, ch := range res.Changes {
		c := refOf(ch).Container(&out.Spec)
		c.Resources.Requests = merged(c.Resources.Requests, ch.Requests)
		c.Resources.Limits = merged(c.Resources.Limits, ch.Limits)
	}
	for _, set := range []map[string]string{res.Annotations, bookkeeping} {
		for k, v := range set {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

// stripEmpty removes "resources": {} and "annotations" members the way a sparse client
// body would lack them, so the patch must create them.
func stripEmpty(doc []byte) []byte {
	var root map[string]any
	_ = json.Unmarshal(doc, &root)
	spec := root["spec"].(map[string]any)
	for _, list := range []string{"containers", "initContainers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			cm := c.(map[string]any)
			if r, ok := cm["resources"].(map[string]any); ok && len(r) == 0 {
				delete(cm, "resources")
			}
		}
	}
	out, _ := json.Marshal(root)
	return out
}

func TestJSONPatchApplies(t *testing.T) {
	bookkeeping := map[string]string{v1.ProfileRefAnnotation: "web-shop-7f3a", v1.PolicyRefAnnotation: "default"}
	cases := map[string]struct {
		pod         *corev1.Pod
		recs        Recommendations
		bookkeeping map[string]string
		wantOps     int
	}{
		"a pod without annotations gets the map created": {
			pod:         pod(container("app").req("cpu", "100m").lim("cpu", "200m")).obj(),
			recs:        Recommendations{"app": {"cpu": rec("cpu", "500m", "")}},
			bookkeeping: bookkeeping,
			wantOps:     2,
		},
		"existing annotations get one escaped op per key": {
			pod:         pod(container("app").req("cpu", "100m")).annotate("team", "shop").obj(),
			recs:        Recommendations{"app": {"cpu": rec("cpu", "300m", "")}},
			bookkeeping: bookkeeping,
			wantOps:     4,
		},
		"a container without resources gets them whole": {
			pod:     pod(container("app")).obj(),
			recs:    Recommendations{"app": {"memory": rec("memory", "128Mi", "256Mi")}},
			wantOps: 2,
		},
		"a container with requests only gets its limits map created": {
			pod:     pod(container("app").req("memory", "100Mi")).annotate("team", "shop").obj(),
			recs:    Recommendations{"app": {"memory": rec("memory", "128Mi", "256Mi")}},
			wantOps: 4, // replace request, add limits map, two annotations
		},
		"a native sidecar is patched under spec.initContainers": {
			pod: pod(container("app").req("cpu", "100m")).
				init(container("migrate"), container("proxy").always().req("cpu", "10m")).obj(),
			recs:    Recommendations{"proxy": {"cpu": rec("cpu", "20m", "")}},
			wantOps: 2,
		},
		"bookkeeping already stamped is not rewritten": {
			pod: pod(container("app")).
				annotate(v1.ProfileRefAnnotation, "web-shop-7f3a", v1.PolicyRefAnnotation, "default").obj(),
			bookkeeping: bookkeeping,
			wantOps:     0,
		},
		"measure mode: bookkeeping only": {
			pod:         pod(container("app").req("cpu", "100m")).obj(),
			bookkeeping: bookkeeping,
			wantOps:     1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := Admission(tc.pod, tc.recs, Params{Managed: defaultManaged()})
			ops, err := JSONPatch(tc.pod, res, tc.bookkeeping)
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) != tc.wantOps {
				t.Errorf("%d operations, want %d: %+v", len(ops), tc.wantOps, ops)
			}
			doc, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			for variant, body := range map[string][]byte{"full": doc, "sparse": stripEmpty(doc)} {
				patched, err := applyJSONPatch(body, ops)
				if err != nil {
					t.Fatalf("%s body: patch does not apply: %v", variant, err)
				}
				var got corev1.Pod
				if err := json.Unmarshal(patched, &got); err != nil {
					t.Fatal(err)
				}
				want := expectedAfter(tc.pod, res, tc.bookkeeping)
				if diff := cmp.Diff(want, &got, cmpOpts...); diff != "" {
					t.Errorf("%s body: patched pod (-want +got):\n%s", variant, diff)
				}
			}
		})
	}
}

func TestJSONPatchPaths(t *testing.T) {
	p := pod(container("app").req("cpu", "100m").lim("cpu", "200m")).annotate("a/b~c", "x").obj()
	res := Result{
		Changes:     []ContainerChanges{{Name: "app", Requests: rl("cpu", "150m"), Limits: rl("memory", "1Gi")}},
		Annotations: map[string]string{v1.AppliedAnnotation("cpu", "request"): "150m"},
	}
	ops, err := JSONPatch(p, res, map[string]string{"a/b~c": "y"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Operation{
		{Op: "replace", Path: "/spec/containers/0/resources/requests/cpu", Value: q("150m")},
		{Op: "add", Path: "/spec/containers/0/resources/limits/memory", Value: q("1Gi")},
		{Op: "add", Path: "/metadata/annotations/a~1b~0c", Value: "y"},
		{Op: "add", Path: "/metadata/annotations/ballast.tightlinesoftware.com~1applied-cpu-request", Value: "150m"},
	}
	if diff := cmp.Diff(want, ops, cmpOpts...); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
	if _, err := JSONPatch(p, Result{Changes: []ContainerChanges{{Name: "gone", Index: 3, Requests: rl("cpu", "1")}}}, nil); err == nil {
		t.Error("a change for a missing container rendered without error")
	}
}
