package understudy

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
)

func optedIn(n int32) *appsv1.Deployment {
	d := settled(n)
	d.Spec.Template.Annotations = map[string]string{RelocateAnnotation: "true"}
	return d
}

var webKey = types.NamespacedName{Namespace: "app", Name: "web"}

func (f *fixture) reconcileOptIn() {
	f.t.Helper()
	if _, err := f.ctrl.ReconcileOptIn(context.Background(), webKey); err != nil {
		f.t.Fatal(err)
	}
}

func TestOptInRelocation(t *testing.T) {
	f, r, rec := relocFixture(t, optedIn(1), withUID(pod("web-a", "n1", true), "a"), node("n1", false), node("n2", false))
	ctx := context.Background()
	if took, err := r.Relocate(ctx, getPod(f, "web-a"), nil, "no room"); !took || err != nil {
		t.Fatalf("Relocate = %v, %v; want taken", took, err)
	}
	d := f.deployment()
	s, ok, err := parseRelocation(d)
	if !ok || err != nil || s.OriginalReplicas != 1 || s.Pod != "web-a" || s.Node != "n1" || *d.Spec.Replicas != 2 {
		t.Fatalf("after Relocate: state %+v %v %v, replicas %d", s, ok, err, *d.Spec.Replicas)
	}
	if c := getPod(f, "web-a").Annotations["controller.kubernetes.io/pod-deletion-cost"]; c != "-1000" {
		t.Errorf("deletion cost %q", c)
	}
	if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "again"); !took || *f.deployment().Spec.Replicas != 2 {
		t.Error("asked again: not taken, or surged twice")
	}
	// A restart mid-surge where the replica write was lost: the state brings it back.
	d = f.deployment()
	one := int32(1)
	d.Spec.Replicas = &one
	f.update(d)
	f.reconcileOptIn()
	if r := *f.deployment().Spec.Replicas; r != 2 {
		t.Fatalf("replicas %d after reconciling the surge state, want 2", r)
	}
	mustCreate(f, pod("web-b", "n2", true))
	f.reconcileOptIn()
	d = f.deployment()
	if _, ok, _ := parseRelocation(d); ok || *d.Spec.Replicas != 1 {
		t.Fatalf("after the stand-in is Ready: state present %v, replicas %d; want removed and 1", ok, *d.Spec.Replicas)
	}
	if len(rec.calls) != 1 || rec.calls[0] != "web-a->web-b@n2" {
		t.Errorf("recorded %v", rec.calls)
	}
	f.reconcileOptIn() // nothing left to do
	if len(rec.calls) != 1 || *f.deployment().Spec.Replicas != 1 {
		t.Errorf("second reconcile: recorded %v replicas %d", rec.calls, *f.deployment().Spec.Replicas)
	}
}

func TestOptInRelocationDeadline(t *testing.T) {
	f, r, rec := relocFixture(t, optedIn(1), withUID(pod("web-a", "n1", true), "a"), node("n1", false), node("n2", false))
	ctx := context.Background()
	if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "no room"); !took {
		t.Fatal("not taken")
	}
	mustCreate(f, pod("web-b", "n2", false))
	f.reconcileOptIn()
	if *f.deployment().Spec.Replicas != 2 {
		t.Fatal("gave up before the deadline")
	}
	f.clock.Step(optInDeadline)
	f.reconcileOptIn()
	d := f.deployment()
	if _, ok, _ := parseRelocation(d); ok || *d.Spec.Replicas != 1 || len(rec.calls) != 0 {
		t.Fatalf("after the deadline: state %v replicas %d recorded %v", ok, *d.Spec.Replicas, rec.calls)
	}
	if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "no room"); took {
		t.Error("relocated again right after an abandoned relocation")
	}
}

func TestOptInDeclines(t *testing.T) {
	ctx := context.Background()
	for name, d := range map[string]*appsv1.Deployment{"two replicas": optedIn(2), "not opted in": settled(1)} {
		f, r, _ := relocFixture(t, d, pod("web-a", "n1", true), node("n1", false))
		if took, err := r.Relocate(ctx, getPod(f, "web-a"), nil, "x"); took || err != nil {
			t.Errorf("%s: took %v, %v", name, took, err)
		}
		if _, ok, _ := parseRelocation(f.deployment()); ok {
			t.Errorf("%s: state written", name)
		}
	}
	f, _, _ := relocFixture(t, optedIn(1), pod("web-a", "n1", true))
	d := f.deployment()
	d.Annotations = map[string]string{RelocationStateAnnotation: "{not json"}
	f.update(d)
	f.reconcileOptIn() // logged, nothing touched
	if r := *f.deployment().Spec.Replicas; r != 1 || f.deployment().Annotations[RelocationStateAnnotation] != "{not json" {
		t.Errorf("unreadable state: replicas %d, annotation %q", r, f.deployment().Annotations[RelocationStateAnnotation])
	}
}
