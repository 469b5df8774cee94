package resolve

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/logging"
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

// TestInvalidPolicyLoggedOncePerGeneration: admissions resolve many pods against the same
// broken policy; its problem is logged once per generation, not once per pod.
func TestInvalidPolicyLoggedOncePerGeneration(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	bad := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad", UID: "bad", Generation: 1},
		Spec: ballastv1.ResourcePolicySpec{Readiness: ballastv1.Readiness{MaxCV: "lots"}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(bad).Build()
	var buf bytes.Buffer
	r := New(c).WithLogger(logging.New("info", "json", &buf))
	for i := 0; i < 3; i++ {
		if got, err := r.Candidates(ctx, "team"); err != nil || len(got) != 0 {
			t.Fatalf("candidates = %v, %v; want none", got, err)
		}
	}
	if n := strings.Count(buf.String(), "policy skipped in resolution"); n != 1 {
		t.Fatalf("%d lines for three resolutions, want 1:\n%s", n, buf.String())
	}
	bad.Generation = 2
	if err := c.Update(ctx, bad); err != nil {
		t.Fatal(err)
	}
	_, _ = r.Candidates(ctx, "team")
	if n := strings.Count(buf.String(), "policy skipped in resolution"); n != 2 {
		t.Errorf("%d lines after a new generation, want 2", n)
	}
}
