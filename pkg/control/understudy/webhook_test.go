package understudy

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func evictionRequest(ns, name string) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Namespace: ns, Name: name,
		Operation: admissionv1.Create, SubResource: "eviction", UserInfo: authenticationv1.UserInfo{Username: "system:admin"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}}}
}

func TestHandleAnswers429(t *testing.T) {
	f := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", true), node("n2", false))
	f.reconcile("guard")
	resp := f.ev.Handle(context.Background(), evictionRequest("app", "web-a"))
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusTooManyRequests ||
		resp.Result.Reason != metav1.StatusReasonTooManyRequests ||
		resp.Result.Message != "held by Understudy app/guard: waiting for a ready stand-in (stand-in not Ready yet)" {
		t.Fatalf("response = %+v %+v", resp.Allowed, resp.Result)
	}
	for _, req := range []admission.Request{evictionRequest("other", "web-a"), evictionRequest("app", "missing"),
		evictionRequest("ballast-system", "ballast-control-x")} {
		if resp := f.ev.Handle(context.Background(), req); !resp.Allowed {
			t.Errorf("%s/%s: denied", req.Namespace, req.Name)
		}
	}
	if n := f.m.EvictionsHeld.WithLabelValues("app", "guard"); n == nil {
		t.Fatal("no held counter")
	}
	// holdMode off: surged, never held; voluntary-only holds the voluntary cordon.
	for mode, held := range map[string]bool{ballastv1.HoldOff: false, ballastv1.HoldVoluntaryOnly: true} {
		u := f.understudy("guard")
		u.Spec.HoldMode = mode
		f.update(u)
		if d, _ := f.ev.Decide(context.Background(), "app", "web-a"); d.Held != held {
			t.Errorf("holdMode %s: held = %v, want %v", mode, d.Held, held)
		}
	}
}

func TestIndexOldestWins(t *testing.T) {
	x := NewIndex()
	a, b := us("a", "web"), us("b", "web")
	b.CreationTimestamp = metav1.NewTime(t0.Add(-1))
	x.Upsert(a)
	x.Upsert(b)
	if k, _ := x.Owner(types.NamespacedName{Namespace: "app", Name: "web"}); k.Name != "b" {
		t.Errorf("owner = %s, want the older b", k.Name)
	}
	x.Delete(types.NamespacedName{Namespace: "app", Name: "b"})
	if k, _ := x.Owner(types.NamespacedName{Namespace: "app", Name: "web"}); k.Name != "a" {
		t.Errorf("owner after delete = %s, want a", k.Name)
	}
	x.Delete(types.NamespacedName{Namespace: "app", Name: "a"})
	if x.Guards("app") {
		t.Error("namespace still guarded after every Understudy is gone")
	}
}

// BenchmarkDecideUnprotected is the cost of the answer for a pod in a namespace without
// any Understudy (the vast majority of evictions): map lookups, no API call.
func BenchmarkDecideUnprotected(b *testing.B) {
	objs := []any{settled(1)}
	for i := 0; i < 1000; i++ {
		u := us(fmt.Sprintf("u%d", i), fmt.Sprintf("d%d", i))
		u.Namespace = fmt.Sprintf("ns%d", i)
		objs = append(objs, u)
	}
	f := newFixture(b, clientObjects(objs)...)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if d, _ := f.ev.Decide(ctx, "unguarded", "some-pod"); d.Held {
			b.Fatal("held")
		}
	}
}

// BenchmarkHandleUnprotected is the same through the admission handler.
func BenchmarkHandleUnprotected(b *testing.B) {
	f := newFixture(b, us("guard", "web"))
	ctx := context.Background()
	req := evictionRequest("unguarded", "some-pod")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if resp := f.ev.Handle(ctx, req); !resp.Allowed {
			b.Fatal("denied")
		}
	}
}
