package policy

import (
	"cmp"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// PodFacts are the inputs of resolution (SPEC §3.4): what a pod carries plus the kinds
// found by its owner walk (TopLevel).
type PodFacts struct {
	Namespace   string
	Labels      map[string]string
	Annotations map[string]string
	// Kind is the kind of the top-level workload (Pod for a pod without controller).
	Kind string
	// ControllerKind is the kind of the pod's direct controller, "" when it has none.
	ControllerKind string
}

// Resolve returns the policy governing pod, or nil for "no policy" (SPEC §3.4).
// candidates are the compiled (and so valid) policies of both kinds; nil entries are
// skipped. A ResourcePolicy is considered only for pods of its own namespace. Among the
// matching policies any ResourcePolicy beats any ClusterResourcePolicy, then the higher
// priority wins, then the lexicographically smaller name.
func Resolve(candidates []*Compiled, pod PodFacts) *Compiled {
	var winner *Compiled
	for _, c := range candidates {
		if c == nil || !c.InScope(pod.Namespace) || !c.Matches(pod) {
			continue
		}
		if winner == nil || outranks(c, winner) {
			winner = c
		}
	}
	return winner
}

// outranks reports whether a ranks strictly before b.
func outranks(a, b *Compiled) bool {
	return cmp.Or(
		cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)),
		cmp.Compare(b.Spec.Priority, a.Spec.Priority), // higher priority first
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Namespace, b.Namespace), // only breaks ties between identical inputs
	) < 0
}

func kindRank(kind string) int {
	if kind == ballastv1.KindResourcePolicy {
		return 0
	}
	return 1
}
