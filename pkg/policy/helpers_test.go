package policy

import (
	"testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func objectMeta(namespace, name string, generation int64) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: generation}
}

// policyBuilder builds a compiled policy for tests:
// clusterPolicy("a").Priority(5).Kinds("Deployment").Compile(t).
type policyBuilder struct {
	kind, namespace, name string
	spec                  ballastv1.ResourcePolicySpec
}

func clusterPolicy(name string) *policyBuilder {
	return &policyBuilder{kind: ballastv1.KindClusterResourcePolicy, name: name}
}

func namespacedPolicy(namespace, name string) *policyBuilder {
	return &policyBuilder{kind: ballastv1.KindResourcePolicy, namespace: namespace, name: name}
}

func (b *policyBuilder) Priority(p int32) *policyBuilder { b.spec.Priority = p; return b }

func (b *policyBuilder) Kinds(k ...string) *policyBuilder { b.spec.Selector.Kinds = k; return b }

func (b *policyBuilder) Include(p ...string) *policyBuilder {
	b.spec.Selector.Namespaces.Include = p
	return b
}

func (b *policyBuilder) Exclude(p ...string) *policyBuilder {
	b.spec.Selector.Namespaces.Exclude = p
	return b
}

func (b *policyBuilder) Annotations(kv ...string) *policyBuilder {
	b.spec.Selector.Annotations = pairs(kv...)
	return b
}

func (b *policyBuilder) Labels(ls *metav1.LabelSelector) *policyBuilder {
	b.spec.Selector.LabelSelector = ls
	return b
}

// Compile compiles the policy and fails the test if it is invalid.
func (b *policyBuilder) Compile(t *testing.T) *Compiled {
	t.Helper()
	c, err := Compile(b.kind, b.namespace, b.name, 1, b.spec, Floors{})
	if err != nil {
		t.Fatalf("compiling %s %s/%s: %v", b.kind, b.namespace, b.name, err)
	}
	return c
}

func pairs(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
