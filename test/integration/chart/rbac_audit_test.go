package chart

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// writeVerbs are the RBAC verbs that change an object, with the admission operation each
// reaches a ValidatingAdmissionPolicy as.
var writeVerbs = map[string]admissionregistrationv1.OperationType{
	"create": admissionregistrationv1.Create, "update": admissionregistrationv1.Update,
	"patch": admissionregistrationv1.Update, "delete": admissionregistrationv1.Delete,
	"deletecollection": admissionregistrationv1.Delete,
}

// unbounded lists the writes on resources outside Ballast's API group that need no policy,
// each with the reason. A write verb on any other resource needs a policy in the render.
var unbounded = []struct {
	group, resource string
	verbs           []string
	named           bool // the rule must carry resourceNames
	namespaced      bool // only in a Role (the release namespace), never a ClusterRole
	reason          string
}{
	{"", "events", []string{"create", "patch"}, false, false, "an Event is a record: writing one changes no workload"},
	{"events.k8s.io", "events", []string{"create", "patch"}, false, false, "an Event is a record: writing one changes no workload"},
	{"authentication.k8s.io", "tokenreviews", []string{"create"}, false, false, "a review asks the API server a question and stores nothing"},
	{"authorization.k8s.io", "subjectaccessreviews", []string{"create"}, false, false, "a review asks the API server a question and stores nothing"},
	{"coordination.k8s.io", "leases", []string{"create", "update", "patch", "delete"}, false, true, "leader election: Leases of the release namespace only"},
	{"", "secrets", []string{"update"}, true, true, "the one certificate Secret of the release, by name"},
	{"", "serviceaccounts/token", []string{"create"}, true, true,
		"operators' debug Role: mints audience-bound tokens of the debug ServiceAccount only, by name (that account has no RBAC of its own)"},
	{"apiextensions.k8s.io", "customresourcedefinitions", []string{"patch", "update"}, true, false, "the CRD hook applies Ballast's own CRDs, by name"},
	{"apiextensions.k8s.io", "customresourcedefinitions", []string{"create"}, false, false,
		"the CRD hook creates a missing Ballast CRD (RBAC cannot name a create; the pre-install hook runs before any policy exists)"},
}

// auditRow is one write verb of one rule and what bounds it.
type auditRow struct {
	role, group, resource, verb, bound string
}

// policyRef is a rendered ValidatingAdmissionPolicy with a Deny binding.
type policyRef struct {
	name  string
	rules []admissionregistrationv1.NamedRuleWithOperations
	who   string // the matchConditions' expressions
}

// auditRBAC lists every write verb of every ClusterRole and Role in the render and what
// bounds it: Ballast's own group, an entry of unbounded, or a policy whose rules cover the
// resource and operation and whose matchConditions name each ServiceAccount bound to the
// role. problems lists the writes nothing bounds.
func auditRBAC(t *testing.T, m *manifests) (rows []auditRow, problems []string) {
	t.Helper()
	denied := map[string]bool{}
	for _, k := range m.keys() {
		if o := m.byKey[k]; o.Kind == "ValidatingAdmissionPolicyBinding" {
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			m.decode(t, o.Kind, o.Name, b)
			if slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
				denied[b.Spec.PolicyName] = true
			}
		}
	}
	var policies []policyRef
	subjects := map[string][]string{} // "Kind/name" of a role -> ServiceAccount usernames
	type role struct {
		key   string
		rules []rbacv1.PolicyRule
	}
	var roles []role
	for _, k := range m.keys() {
		o := m.byKey[k]
		switch o.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			m.decode(t, o.Kind, o.Name, p)
			if !denied[p.Name] {
				continue
			}
			ref := policyRef{name: p.Name}
			if p.Spec.MatchConstraints != nil {
				ref.rules = p.Spec.MatchConstraints.ResourceRules
			}
			for _, c := range p.Spec.MatchConditions {
				ref.who += c.Expression + "\n"
			}
			policies = append(policies, ref)
		case "ClusterRoleBinding", "RoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			m.decode(t, o.Kind, o.Name, b)
			for _, s := range b.Subjects {
				if s.Kind == rbacv1.ServiceAccountKind {
					key := b.RoleRef.Kind + "/" + b.RoleRef.Name
					subjects[key] = append(subjects[key], "system:serviceaccount:"+s.Namespace+":"+s.Name)
				}
			}
		case "ClusterRole", "Role":
			r := &rbacv1.ClusterRole{}
			m.decode(t, o.Kind, o.Name, r)
			roles = append(roles, role{key: k, rules: r.Rules})
		}
	}
	for _, r := range roles {
		for _, rule := range r.rules {
			verbs := rule.Verbs
			if slices.Contains(verbs, "*") {
				problems = append(problems, fmt.Sprintf("%s: verb * on %v", r.key, rule.Resources))
				continue
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range verbs {
						op, write := writeVerbs[v]
						if !write {
							continue
						}
						row := auditRow{role: r.key, group: g, resource: res, verb: v}
						switch bound, why := boundBy(r.key, g, res, v, op, rule, policies, subjects[r.key]); {
						case bound != "":
							row.bound = bound
						default:
							problems = append(problems, fmt.Sprintf("%s: %s %s/%s: %s", r.key, v, g, res, why))
						}
						rows = append(rows, row)
					}
				}
			}
		}
	}
	return rows, problems
}

// boundBy names what bounds one write, or says why nothing does.
func boundBy(roleKey, group, res, verb string, op admissionregistrationv1.OperationType, rule rbacv1.PolicyRule,
	policies []policyRef, users []string) (bound, why string) {
	if group == "ballast.tightlinesoftware.com" {
		return "Ballast's own API group", ""
	}
	if group == "*" || res == "*" || res == "*/*" {
		return "", "a wildcard group or resource"
	}
	for _, u := range unbounded {
		if u.group != group || u.resource != res || !slices.Contains(u.verbs, verb) {
			continue
		}
		if u.named && len(rule.ResourceNames) == 0 {
			return "", "allowed only with resourceNames"
		}
		if u.namespaced && !strings.HasPrefix(roleKey, "Role/") {
			return "", "allowed only in a namespaced Role"
		}
		return "none needed: " + u.reason, ""
	}
	var names []string
	for _, p := range policies {
		if !covers(p.rules, group, res, op) {
			continue
		}
		for _, u := range users {
			if !strings.Contains(p.who, `"`+u+`"`) {
				return "", fmt.Sprintf("policy %s does not judge %s", p.name, u)
			}
		}
		names = append(names, p.name)
	}
	if len(names) == 0 {
		return "", "no ValidatingAdmissionPolicy (with a Deny binding) covers " + string(op) + "; add one or an entry with a reason to unbounded"
	}
	return "policy " + strings.Join(names, ", "), ""
}

// covers reports whether rules match group/resource (a subresource only when named, as
// "pods/resize", "pods/*" or "*/*") for op.
func covers(rules []admissionregistrationv1.NamedRuleWithOperations, group, res string, op admissionregistrationv1.OperationType) bool {
	main, sub, isSub := strings.Cut(res, "/")
	for _, r := range rules {
		if !slices.Contains(r.Operations, op) && !slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
			continue
		}
		if !slices.Contains(r.APIGroups, group) && !slices.Contains(r.APIGroups, "*") {
			continue
		}
		for _, rr := range r.Resources {
			rm, rs, rIsSub := strings.Cut(rr, "/")
			switch {
			case rr == "*/*", rr == res:
				return true
			case !isSub && !rIsSub && rr == "*":
				return true
			case isSub && rIsSub && rm == main && rs == "*", isSub && rIsSub && rm == "*" && rs == sub:
				return true
			}
		}
	}
	return false
}

// auditRenders are the value combinations whose RBAC differs.
var auditRenders = map[string][]string{
	"defaults (built-in certificates, Understudy)": nil,
	"cert-manager":                 {"--set", "certManager.enabled=true"},
	"without Understudy":           {"--set", "understudy.enabled=false"},
	"fallback with storage":        {"--set", "fallback.enabled=true", "--set", "fallback.ephemeralStorage=true"},
	"secure metrics":               {"--set", "telemetry.prometheus.enabled=true", "--set", "telemetry.prometheus.secure=true"},
	"agent debug endpoint":         {"--set", "agent.debug.enabled=true"},
	"single replica, no election":  {"--set", "leaderElect=false", "--set", "replicaCount=1"},
	"without the CRD upgrade hook": {"--set", "crds.upgradeHook.enabled=false"},
	"hpa scale-target":             {"--set", "hpa.scaleTarget=true"},
}

// TestRBACWritesBounded renders the chart with each value combination and fails when any
// ClusterRole or Role grants a write verb that neither Ballast's own API group, a reasoned
// entry of unbounded, nor a ValidatingAdmissionPolicy bounds. With -v it logs the table.
func TestRBACWritesBounded(t *testing.T) {
	h := newHelm(t)
	table := map[auditRow]bool{}
	names := make([]string, 0, len(auditRenders))
	for name := range auditRenders {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := h.mustTemplate(t, auditRenders[name]...)
		rows, problems := auditRBAC(t, m)
		for _, p := range problems {
			t.Errorf("%s: %s", name, p)
		}
		for _, r := range rows {
			table[r] = true
		}
	}
	var lines []string
	for r := range table {
		lines = append(lines, fmt.Sprintf("| %s | %s | `%s/%s` | %s |", strings.TrimPrefix(r.role, "ClusterRole/"), r.verb, r.group, r.resource, r.bound))
	}
	sort.Strings(lines)
	t.Logf("\n| role | verb | group/resource | bounded by |\n| --- | --- | --- | --- |\n%s", strings.Join(lines, "\n"))
}

// TestRBACAuditCatchesNewVerbs: a write verb added to a role without a policy, a policy
// that judges another ServiceAccount, or a named exception granted without its names, is
// reported.
func TestRBACAuditCatchesNewVerbs(t *testing.T) {
	m := newHelm(t).mustTemplate(t)
	if _, problems := auditRBAC(t, m); len(problems) != 0 {
		t.Fatalf("the default render already fails the audit: %v", problems)
	}
	add := func(kind, name string, rule rbacv1.PolicyRule) *manifests {
		r := &rbacv1.ClusterRole{}
		m.decode(t, kind, name, r)
		r.Rules = append(r.Rules, rule)
		return withObject(t, m, kind, name, r)
	}
	cases := map[string]struct {
		m    *manifests
		want string
	}{
		"delete deployments": {add("ClusterRole", fullname+"-understudy",
			rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"delete"}}), "delete apps/deployments"},
		"patch statefulsets": {add("ClusterRole", fullname,
			rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"patch"}}), "patch apps/statefulsets"},
		"create secrets": {add("Role", fullname+"-webhook-cert",
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}), "create /secrets"},
		"update secrets without a name": {add("Role", fullname+"-webhook-cert",
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"update"}}), "allowed only with resourceNames"},
		"patch pods/ephemeralcontainers": {add("ClusterRole", fullname,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/ephemeralcontainers"}, Verbs: []string{"patch"}}), "patch /pods/ephemeralcontainers"},
		"a write for the node agent": {add("ClusterRole", fullname+"-node",
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"patch"}}), "does not judge system:serviceaccount:" + namespace + ":" + fullname + "-node"},
	}
	for name, c := range cases {
		_, problems := auditRBAC(t, c.m)
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }) {
			t.Errorf("%s: problems %q, want one containing %q", name, problems, c.want)
		}
	}
}

// withObject returns a copy of m with Kind/name replaced by o.
func withObject(t *testing.T, m *manifests, kind, name string, o any) *manifests {
	t.Helper()
	j, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	out := &manifests{byKey: map[string]object{}, order: m.order, raw: m.raw}
	for k, v := range m.byKey {
		out.byKey[k] = v
	}
	prev := out.byKey[kind+"/"+name]
	prev.JSON = j
	out.byKey[kind+"/"+name] = prev
	return out
}
