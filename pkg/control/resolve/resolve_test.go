package resolve

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/logging"
	"github.com/ballastk8s/ballast/pkg/policy"
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

// TestPolicyByRef: Policy loads a profile's policyRef through the memo — the same compiled
// object admission resolved against, recompiled only on a new generation — returns nothing
// for a deleted policy and the validation failure of an invalid one.
func TestPolicyByRef(t *testing.T) {
	s := runtime.NewScheme()
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	valid := ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{{Resource: "cpu", Field: "request", Source: "km", Aggregation: "p90"}}}
	crp := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "crp", Generation: 1}, Spec: valid}
	rp := &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "a", UID: "rp", Generation: 1}, Spec: valid}
	bad := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad", UID: "bad", Generation: 1},
		Spec: ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{{Resource: "gpu", Field: "request", Source: "km", Aggregation: "p90"}}}}
	km := &ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "km"},
		Spec: ballastv1.MetricsSourceSpec{Type: ballastv1.SourceTypeKubernetesMetrics}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(crp, rp, bad, km).Build()
	r := New(c)
	cluster := ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "default"}
	first, err := r.Policy(ctx, cluster)
	if err != nil || first == nil || first.Key() != "ClusterResourcePolicy//default" {
		t.Fatalf("Policy(default) = %+v, %v", first, err)
	}
	cands, err := r.Candidates(ctx, "")
	if err != nil || len(cands) != 1 || cands[0] != first {
		t.Errorf("admission resolves against another compilation: %v (err %v), want the memoized %p", cands, err, first)
	}
	if again, _ := r.Policy(ctx, cluster); again != first {
		t.Error("the same generation was compiled twice")
	}
	got := &ballastv1.ClusterResourcePolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: "default"}, got); err != nil {
		t.Fatal(err)
	}
	got.Generation = 2
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if next, _ := r.Policy(ctx, cluster); next == first || next == nil {
		t.Error("a new generation was not recompiled")
	}
	if p, err := r.Policy(ctx, ballastv1.PolicyRef{Kind: ballastv1.KindResourcePolicy, Namespace: "a", Name: "team"}); err != nil || p == nil || p.Namespace != "a" {
		t.Errorf("Policy(a/team) = %+v, %v", p, err)
	}
	if p, err := r.Policy(ctx, ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "gone"}); p != nil || err != nil {
		t.Errorf("a deleted policy = %+v, %v; want nil, nil", p, err)
	}
	var verr *policy.ValidationError
	if p, err := r.Policy(ctx, ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "bad"}); p != nil || !errors.As(err, &verr) {
		t.Errorf("an invalid policy = %+v, %v; want its *policy.ValidationError", p, err)
	}
}
