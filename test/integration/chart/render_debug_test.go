package chart

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The agents' debug endpoints serve only tokens of the debug service account, which the
// chart renders with no RBAC of its own; the Role ballast-debug may mint its tokens (that
// one name), find the agent pods and, with the pods/proxy listener, reach them. Nothing of
// it exists with both listeners off.
func TestRenderDebugIdentity(t *testing.T) {
	h := newHelm(t)
	const name = "ballast-debug"
	mint := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{name}, Verbs: []string{"create"}}
	list := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}
	proxy := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/proxy"}, Verbs: []string{"get"}}
	for _, c := range []struct {
		name string
		args []string
		want []rbacv1.PolicyRule
	}{
		{"defaults (loopback endpoint)", nil, []rbacv1.PolicyRule{mint, list}},
		{"pods/proxy listener", []string{"--set", "agent.debug.proxy.enabled=true"}, []rbacv1.PolicyRule{mint, list, proxy}},
		{"pods/proxy listener only", []string{"--set", "agent.debug.enabled=false", "--set", "agent.debug.proxy.enabled=true"}, []rbacv1.PolicyRule{mint, list, proxy}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := h.mustTemplate(t, c.args...)
			sa := &corev1.ServiceAccount{}
			m.decode(t, "ServiceAccount", name, sa)
			if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
				t.Errorf("debug service account automounts its token: %v", sa.AutomountServiceAccountToken)
			}
			role := &rbacv1.Role{}
			m.decode(t, "Role", name, role)
			if diff := cmp.Diff(c.want, role.Rules); diff != "" {
				t.Errorf("debug Role rules (-want +got):\n%s", diff)
			}
			if m.has("RoleBinding", name) {
				t.Error("RoleBinding rendered without agent.debug.viewers")
			}
			// Nothing binds the debug service account itself.
			for _, k := range m.keys() {
				for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
					if n, ok := strings.CutPrefix(k, kind+"/"); ok {
						var b rbacv1.RoleBinding
						m.decode(t, kind, n, &b)
						for _, s := range b.Subjects {
							if s.Kind == rbacv1.ServiceAccountKind && s.Name == name {
								t.Errorf("%s binds the debug service account", k)
							}
						}
					}
				}
			}
			ds := &appsv1.DaemonSet{}
			m.decode(t, "DaemonSet", "ballast-node", ds)
			var env string
			for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "BALLAST_DEBUG_SERVICE_ACCOUNT" {
					env = e.Value
				}
			}
			if env != "ballast-system/"+name {
				t.Errorf("agent env BALLAST_DEBUG_SERVICE_ACCOUNT %q, want ballast-system/%s", env, name)
			}
			cr := &rbacv1.ClusterRole{}
			m.decode(t, "ClusterRole", "ballast-node", cr)
			for _, r := range cr.Rules {
				for _, res := range r.Resources {
					if res == "subjectaccessreviews" {
						t.Error("the agent may still create subjectaccessreviews: it authorizes nothing itself")
					}
				}
			}
		})
	}

	viewers := h.mustTemplate(t, "--set", "agent.debug.viewers[0].kind=Group", "--set", "agent.debug.viewers[0].name=sre",
		"--set", "agent.debug.viewers[0].apiGroup=rbac.authorization.k8s.io")
	rb := &rbacv1.RoleBinding{}
	viewers.decode(t, "RoleBinding", name, rb)
	want := rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "sre", APIGroup: rbacv1.GroupName}}}
	if diff := cmp.Diff(want.RoleRef, rb.RoleRef); diff != "" {
		t.Errorf("roleRef (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Subjects, rb.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}

	off := h.mustTemplate(t, "--set", "agent.debug.enabled=false")
	if off.has("ServiceAccount", name) || off.has("Role", name) {
		t.Error("debug service account or Role rendered with both debug listeners off")
	}
	if _, err := h.template(t, "--set", "agent.debug.viewers[0].kind=Robot", "--set", "agent.debug.viewers[0].name=x"); err == nil {
		t.Error("a viewer of kind Robot was accepted")
	}
}
