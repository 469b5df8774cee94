package chart

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRenderHPAScaleTarget: HPAs are always readable; hpa.scaleTarget adds the flag, the patch
// verb and the policy that bounds it, and nothing of it renders by default.
func TestRenderHPAScaleTarget(t *testing.T) {
	h := newHelm(t)
	vap := fullname + "-control-hpa-patches"
	check := func(t *testing.T, m *manifests, on bool) {
		t.Helper()
		cr := &rbacv1.ClusterRole{}
		m.decode(t, "ClusterRole", fullname, cr)
		var verbs []string
		for _, r := range cr.Rules {
			if slices.Contains(r.APIGroups, "autoscaling") && slices.Contains(r.Resources, "horizontalpodautoscalers") {
				verbs = append(verbs, r.Verbs...)
			}
		}
		want := []string{"get", "list", "watch"}
		if on {
			want = append(want, "patch")
		}
		if !slices.Equal(verbs, want) {
			t.Errorf("verbs on horizontalpodautoscalers = %v, want %v", verbs, want)
		}
		d := &appsv1.Deployment{}
		m.decode(t, "Deployment", fullname, d)
		if got := slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--hpa-scale-target"); got != on {
			t.Errorf("--hpa-scale-target in args = %v, want %v", got, on)
		}
		if m.has("ValidatingAdmissionPolicy", vap) != on || m.has("ValidatingAdmissionPolicyBinding", vap) != on {
			t.Errorf("policy %s rendered = %v, want %v", vap, m.has("ValidatingAdmissionPolicy", vap), on)
		}
	}
	t.Run("default", func(t *testing.T) { check(t, h.mustTemplate(t), false) })
	t.Run("hpa.scaleTarget", func(t *testing.T) { check(t, h.mustTemplate(t, "--set", "hpa.scaleTarget=true"), true) })
}
