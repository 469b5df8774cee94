package resolve

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// TestMemoForgetsDeletedPolicies: compiled policies are memoized per UID and dropped once
// the policy is gone. The reader is controller-runtime's fake client, standing in for the
// informer cache (an in-memory store either way).
func TestMemoForgetsDeletedPolicies(t *testing.T) {
	s := runtime.NewScheme()
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(s).Build()
	crp := func(name string) *ballastv1.ClusterResourcePolicy {
		return &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}
	}
	rp := &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "a", UID: "rp"}}
	for _, o := range []client.Object{crp("one"), crp("two"), rp} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	r := New(c)
	if got, err := r.Candidates(ctx, "a"); err != nil || len(got) != 3 {
		t.Fatalf("candidates = %d, %v", len(got), err)
	}
	if len(r.cache) != 3 || r.size("") != 2 || r.size("a") != 1 {
		t.Fatalf("memo = %d entries, counts %v", len(r.cache), r.counts)
	}
	if err := c.Delete(ctx, crp("two")); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, rp); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Candidates(ctx, "a"); len(got) != 1 {
		t.Fatalf("candidates after deletion = %d, want 1", len(got))
	}
	if _, ok := r.cache["two"]; ok || len(r.cache) != 1 || r.size("") != 1 || r.size("a") != 0 {
		t.Errorf("memo kept deleted policies: %d entries, counts %v", len(r.cache), r.counts)
	}
}
