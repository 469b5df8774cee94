package chart

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestRenderUnderstudyTaints: understudy.doomTaints and .involuntaryTaints become the
// control plane's --understudy-doom-taints / --understudy-involuntary-taints (SPEC §15.3),
// nothing is passed by default or with understudy disabled, and a value that is not a
// taint key is refused by the schema.
func TestRenderUnderstudyTaints(t *testing.T) {
	h := newHelm(t)
	args := func(extra ...string) []string {
		dep := &appsv1.Deployment{}
		h.mustTemplate(t, extra...).decode(t, "Deployment", fullname, dep)
		return dep.Spec.Template.Spec.Containers[0].Args
	}
	for _, a := range args() {
		if strings.HasPrefix(a, "--understudy-doom-taints") || strings.HasPrefix(a, "--understudy-involuntary-taints") {
			t.Errorf("defaults pass %s", a)
		}
	}
	got := args("--set-json", `understudy.doomTaints=["example.com/drain","maintenance"]`,
		"--set-json", `understudy.involuntaryTaints=["aws-node-termination-handler/spot-itn"]`)
	for _, want := range []string{"--understudy-doom-taints=example.com/drain,maintenance",
		"--understudy-involuntary-taints=aws-node-termination-handler/spot-itn"} {
		if !slices.Contains(got, want) {
			t.Errorf("args %v lack %s", got, want)
		}
	}
	off := args("--set", "understudy.enabled=false", "--set-json", `understudy.doomTaints=["example.com/drain"]`)
	for _, a := range off {
		if strings.HasPrefix(a, "--understudy-doom-taints") {
			t.Errorf("understudy disabled but %s passed", a)
		}
	}
	for _, bad := range []string{`["a,b"]`, `[""]`, `["has space"]`, `["x","x"]`} {
		if _, err := h.template(t, "--set-json", "understudy.doomTaints="+bad); err == nil || !strings.Contains(err.Error(), "doomTaints") {
			t.Errorf("doomTaints=%s: err %v, want a schema error naming doomTaints", bad, err)
		}
	}
}
