package discovery

import (
	"testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// A pod may feed only the profiles its own labels lead to, under a policy that covers it.
func TestTrustedRef(t *testing.T) {
	idLabels := []string{"app"}
	spec := ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{{Resource: "cpu", Field: "request", Source: "s", Aggregation: "p95"}}}
	cluster, err := policy.Compile(ballastv1.KindClusterResourcePolicy, "", "fleet", 1, spec, policy.Floors{})
	if err != nil {
		t.Fatal(err)
	}
	team, err := policy.Compile(ballastv1.KindResourcePolicy, "shop", "team", 1, spec, policy.Floors{})
	if err != nil {
		t.Fatal(err)
	}
	name := func(app string, p *policy.Compiled) string {
		tuple, sel := identity.Tuple(idLabels, map[string]string{"app": app})
		disc := ballastv1.NoPolicy
		if p != nil {
			disc = p.Discriminator()
		}
		return identity.ProfileName(idLabels, tuple, sel, disc)
	}
	pod := func(ns, app, ref string) Pod {
		return Pod{Namespace: ns, Labels: map[string]string{"app": app}, ProfileRef: ref}
	}
	deployments, err := policy.Compile(ballastv1.KindClusterResourcePolicy, "", "deployments", 1, ballastv1.ResourcePolicySpec{
		Selector: ballastv1.PolicySelector{Kinds: []string{"Deployment"}}, Metrics: spec.Metrics}, policy.Floors{})
	if err != nil {
		t.Fatal(err)
	}
	both := []*policy.Compiled{cluster, team}
	cases := map[string]struct {
		pod   Pod
		cands []*policy.Compiled
		want  bool
	}{
		"own labels, cluster policy":              {pod("shop", "web", name("web", cluster)), both, true},
		"own labels, own namespace's policy":      {pod("shop", "web", name("web", team)), both, true},
		"another workload's profile":              {pod("shop", "web", name("victim", cluster)), both, false},
		"another namespace's ResourcePolicy":      {pod("intruder", "web", name("web", team)), both, false},
		"no policy when none covers the pod":      {pod("shop", "web", name("web", nil)), nil, true},
		"no-policy profile while a policy covers": {pod("shop", "web", name("web", nil)), both, false},
		"no policy beside a kinds-only policy":    {pod("shop", "web", name("web", nil)), []*policy.Compiled{deployments}, true},
		"the kinds-only policy's own profile":     {pod("shop", "web", name("web", deployments)), []*policy.Compiled{deployments}, true},
		"a policy that no longer exists":          {pod("shop", "web", name("web", team)), []*policy.Compiled{cluster}, false},
		"an invented name":                        {pod("shop", "web", "web--anything"), both, false},
	}
	for n, c := range cases {
		t.Run(n, func(t *testing.T) {
			if got := TrustedRef(c.pod, idLabels, c.cands); got != c.want {
				t.Errorf("TrustedRef(%s) = %t, want %t", c.pod.ProfileRef, got, c.want)
			}
			got := Resolve(c.pod, Inputs{IdentityLabels: idLabels, Candidates: c.cands,
				Hashes: map[string]string{c.pod.ProfileRef: "0123456789abcdef"}})
			if got.RefIgnored == c.want || (got.Hash != "") != c.want {
				t.Errorf("Resolve: RefIgnored %t, hash %q; trusted should be %t", got.RefIgnored, got.Hash, c.want)
			}
		})
	}
}
