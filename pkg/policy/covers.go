package policy

// Covers reports whether the policy may govern a pod of namespace with these labels and
// annotations, whatever its controller: the namespace scope (a ResourcePolicy only its own
// namespace; namespace include/exclude), the annotation patterns and the labelSelector
// must all match; the selector's kinds are not consulted.
//
// It is the node agent's test of a profile-ref it is handed (the pod may feed a profile of
// this policy): kinds are no trust boundary, because whoever creates the pod chooses its
// controller too, whereas the namespace is given by the API server.
func (c *Compiled) Covers(namespace string, labels, annotations map[string]string) bool {
	if !c.InScope(namespace) {
		return false
	}
	facts := PodFacts{Namespace: namespace, Labels: labels, Annotations: annotations}
	if len(c.kinds) > 0 {
		facts.Kind = c.kinds[0] // any listed kind satisfies the kinds term
	}
	return c.Matches(facts)
}
