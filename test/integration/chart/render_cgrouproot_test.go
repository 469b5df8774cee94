package chart

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// agent.cgroupRoot: empty (the default) passes no --kubelet-cgroup-root and grants get on
// nodes/configz, so each agent reads its own kubelet's cgroupRoot; set, it is passed as the
// flag and the configz grant is dropped. A value that is not a cgroup path fails the schema.
func TestRenderAgentCgroupRoot(t *testing.T) {
	h := newHelm(t)
	render := func(args ...string) ([]string, []rbacv1.PolicyRule) {
		m := h.mustTemplate(t, args...)
		ds := &appsv1.DaemonSet{}
		m.decode(t, "DaemonSet", "ballast-node", ds)
		cr := &rbacv1.ClusterRole{}
		m.decode(t, "ClusterRole", "ballast-node", cr)
		return ds.Spec.Template.Spec.Containers[0].Args, cr.Rules
	}
	grantsConfigz := func(rules []rbacv1.PolicyRule) bool {
		return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "nodes/configz") })
	}
	args, rules := render()
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--kubelet-cgroup-root") }) || !grantsConfigz(rules) {
		t.Errorf("default: args %q, configz granted %v; want no flag and the grant", args, grantsConfigz(rules))
	}
	args, rules = render("--set", "agent.cgroupRoot=/custom")
	if !slices.Contains(args, "--kubelet-cgroup-root=/custom") || grantsConfigz(rules) {
		t.Errorf("agent.cgroupRoot=/custom: args %q, configz granted %v; want the flag and no grant", args, grantsConfigz(rules))
	}
	if _, err := h.template(t, "--set", "agent.cgroupRoot=/a b"); err == nil || !strings.Contains(err.Error(), "cgroupRoot") {
		t.Errorf("agent.cgroupRoot with a space rendered: %v", err)
	}
}
