package chart

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRenderFallback: the metrics.k8s.io fallback is on by default (get/list on
// pods.metrics.k8s.io, the binary's default interval, no flag); turned off, ballast-control
// gets --fallback=false and no metrics.k8s.io rule; another interval is passed on.
func TestRenderFallback(t *testing.T) {
	hasRule := func(cr *rbacv1.ClusterRole) bool {
		for _, r := range cr.Rules {
			if slices.Equal(r.APIGroups, []string{"metrics.k8s.io"}) && slices.Equal(r.Resources, []string{"pods"}) &&
				slices.Equal(r.Verbs, []string{"get", "list"}) {
				return true
			}
		}
		return false
	}
	cases := map[string]struct {
		set      []string
		rule     bool
		arg, not string
	}{
		"default":  {rule: true, not: "--fallback=false"},
		"disabled": {set: []string{"--set", "fallback.enabled=false"}, arg: "--fallback=false"},
		"interval": {set: []string{"--set", "fallback.interval=10s"}, rule: true, arg: "--fallback-interval=10s"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := newHelm(t).mustTemplate(t, c.set...)
			cr := &rbacv1.ClusterRole{}
			m.decode(t, "ClusterRole", fullname, cr)
			if hasRule(cr) != c.rule {
				t.Errorf("metrics.k8s.io pods get/list rule rendered: %v, want %v", hasRule(cr), c.rule)
			}
			d := &appsv1.Deployment{}
			m.decode(t, "Deployment", fullname, d)
			args := d.Spec.Template.Spec.Containers[0].Args
			if c.arg != "" && !slices.Contains(args, c.arg) {
				t.Errorf("args %v lack %s", args, c.arg)
			}
			if c.not != "" && slices.Contains(args, c.not) {
				t.Errorf("args %v hold %s", args, c.not)
			}
		})
	}
	if _, err := newHelm(t).template(t, "--set", "fallback.interval=soon"); err == nil {
		t.Error("an unparseable fallback.interval rendered")
	}
}
