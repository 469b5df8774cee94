package reconciler

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recorder notes what the adapter called.
type recorder struct {
	reconciled []string
	gone       []types.NamespacedName
}

func (r *recorder) Reconcile(_ context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
	r.reconciled = append(r.reconciled, cm.Name+"="+cm.Data["k"])
	return reconcile.Result{}, nil
}

type goneRecorder struct{ *recorder }

func (g goneRecorder) Gone(_ context.Context, key types.NamespacedName) (reconcile.Result, error) {
	g.gone = append(g.gone, key)
	return reconcile.Result{}, nil
}

func TestForFetchesAndReportsGone(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// controller-runtime's fake client: an in-memory stand-in for the cache.
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "here", Namespace: "ns"}, Data: map[string]string{"k": "v"}}).Build()
	newCM := func() *corev1.ConfigMap { return &corev1.ConfigMap{} }
	rec := &recorder{}
	ctx := context.Background()
	here := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "here"}}
	missing := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "missing"}}

	plain := For[*corev1.ConfigMap](c, newCM, rec)
	if _, err := plain.Reconcile(ctx, here); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Reconcile(ctx, missing); err != nil {
		t.Fatalf("a missing object without Gone: %v", err)
	}
	withGone := For[*corev1.ConfigMap](c, newCM, goneRecorder{rec})
	if _, err := withGone.Reconcile(ctx, missing); err != nil {
		t.Fatal(err)
	}
	if len(rec.reconciled) != 1 || rec.reconciled[0] != "here=v" {
		t.Errorf("reconciled %v, want [here=v]", rec.reconciled)
	}
	if len(rec.gone) != 1 || rec.gone[0] != missing.NamespacedName {
		t.Errorf("gone %v, want [%v]", rec.gone, missing.NamespacedName)
	}
}
