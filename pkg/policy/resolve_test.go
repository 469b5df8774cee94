package policy

import (
	"errors"
	"testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestResolve(t *testing.T) {
	pod := PodFacts{Namespace: "shop", Kind: "Deployment", ControllerKind: "ReplicaSet", Labels: pairs("app", "web")}
	cases := map[string]struct {
		policies []*policyBuilder
		pod      PodFacts
		want     string // RefAnnotation of the winner; "" means no policy
	}{
		"no candidates is no policy": {pod: pod, want: ""},
		"a namespaced policy beats a cluster policy of higher priority": {
			policies: []*policyBuilder{clusterPolicy("default").Priority(100), namespacedPolicy("shop", "local")},
			pod:      pod, want: "shop/local",
		},
		"a namespaced policy in another namespace is not a candidate": {
			policies: []*policyBuilder{clusterPolicy("default"), namespacedPolicy("other", "local").Priority(9)},
			pod:      pod, want: "default",
		},
		"an empty pod namespace admits no namespaced policy": {
			policies: []*policyBuilder{namespacedPolicy("shop", "local"), clusterPolicy("default")},
			pod:      PodFacts{Kind: "Pod"}, want: "default",
		},
		"higher priority wins within a kind": {
			policies: []*policyBuilder{clusterPolicy("a").Priority(1), clusterPolicy("b").Priority(5), clusterPolicy("c").Priority(-2)},
			pod:      pod, want: "b",
		},
		"equal priority falls to the smaller name": {
			policies: []*policyBuilder{clusterPolicy("zeta").Priority(3), clusterPolicy("alpha").Priority(3), clusterPolicy("mid").Priority(3)},
			pod:      pod, want: "alpha",
		},
		"namespaced policies rank by priority then name too": {
			policies: []*policyBuilder{
				namespacedPolicy("shop", "b").Priority(2), namespacedPolicy("shop", "a").Priority(2), namespacedPolicy("shop", "c").Priority(1),
			},
			pod: pod, want: "shop/a",
		},
		"a higher-ranked policy whose selector misses is passed over": {
			policies: []*policyBuilder{clusterPolicy("jobs").Priority(10).Kinds("CronJob"), clusterPolicy("default")},
			pod:      pod, want: "default",
		},
		"nothing matches": {
			policies: []*policyBuilder{clusterPolicy("jobs").Kinds("CronJob"), namespacedPolicy("shop", "x").Include("dev")},
			pod:      pod, want: "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var candidates []*Compiled
			for _, b := range tc.policies {
				candidates = append(candidates, b.Compile(t))
			}
			// The order of candidates must not matter.
			for _, order := range [][]*Compiled{candidates, reversed(candidates)} {
				got := ""
				if w := Resolve(order, tc.pod); w != nil {
					got = w.RefAnnotation()
				}
				if got != tc.want {
					t.Errorf("Resolve = %q, want %q", got, tc.want)
				}
			}
		})
	}
}

func TestResolveSkipsABrokenRegexPolicy(t *testing.T) {
	pod := PodFacts{Namespace: "shop", Kind: "Deployment", Annotations: pairs("team", "payments")}
	broken := ballastv1.ResourcePolicySpec{Priority: 100}
	broken.Selector.Annotations = pairs("team", "/pay(ments/")

	// The broken policy outranks the fallback on every criterion, but it does not compile,
	// so it never becomes a candidate.
	c, err := Compile(ballastv1.KindResourcePolicy, "shop", "broken", 4, broken, Floors{})
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.Reason != ReasonInvalidPattern {
		t.Fatalf("Compile(broken) = %v, %v; want a %s validation error", c, err, ReasonInvalidPattern)
	}
	candidates := []*Compiled{c, clusterPolicy("fallback").Annotations("team", "/pay.*/").Compile(t)}
	if w := Resolve(candidates, pod); w == nil || w.Name != "fallback" {
		t.Fatalf("Resolve = %v, want the next policy, fallback", w)
	}
}

func reversed(in []*Compiled) []*Compiled {
	out := make([]*Compiled, len(in))
	for i, c := range in {
		out[len(in)-1-i] = c
	}
	return out
}
