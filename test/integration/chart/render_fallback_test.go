package chart

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRenderFallback: the metrics.k8s.io fallback is on by default (get/list on
// pods.metrics.k8s.io, the binary's default interval, no flag) without ephemeral storage
// (no nodes/proxy); turned off, ballast-control gets --fallback=false and neither rule;
// another interval is passed on; ephemeralStorage adds the flag and get on nodes/proxy.
func TestRenderFallback(t *testing.T) {
	has := func(cr *rbacv1.ClusterRole, group, resource string, verbs ...string) bool {
		for _, r := range cr.Rules {
			if slices.Equal(r.APIGroups, []string{group}) && slices.Equal(r.Resources, []string{resource}) && slices.Equal(r.Verbs, verbs) {
				return true
			}
		}
		return false
	}
	cases := map[string]struct {
		set         []string
		rule, proxy bool
		arg, not    string
	}{
		"default":  {rule: true, not: "--fallback-ephemeral-storage"},
		"disabled": {set: []string{"--set", "fallback.enabled=false", "--set", "fallback.ephemeralStorage=true"}, arg: "--fallback=false", not: "--fallback-ephemeral-storage"},
		"interval": {set: []string{"--set", "fallback.interval=10s"}, rule: true, arg: "--fallback-interval=10s"},
		"ephemeral": {set: []string{"--set", "fallback.ephemeralStorage=true"}, rule: true, proxy: true,
			arg: "--fallback-ephemeral-storage", not: "--fallback=false"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := newHelm(t).mustTemplate(t, c.set...)
			cr := &rbacv1.ClusterRole{}
			m.decode(t, "ClusterRole", fullname, cr)
			if got := has(cr, "metrics.k8s.io", "pods", "get", "list"); got != c.rule {
				t.Errorf("metrics.k8s.io pods get/list rule rendered: %v, want %v", got, c.rule)
			}
			if got := has(cr, "", "nodes/proxy", "get"); got != c.proxy {
				t.Errorf("nodes/proxy get rule rendered: %v, want %v", got, c.proxy)
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
