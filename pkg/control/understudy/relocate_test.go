package understudy

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
)

// recorded is a RelocationRecorder that remembers its calls (the resize controller's
// record is tested in pkg/control/resize).
type recorded struct{ calls []string }

func (r *recorded) Relocated(_ context.Context, old *corev1.Pod, standIn, node string) {
	r.calls = append(r.calls, old.Name+"->"+standIn+"@"+node)
}

func relocFixture(t *testing.T, objs ...any) (*fixture, *Relocator, *recorded) {
	f := newFixture(t, clientObjects(objs)...)
	r := NewRelocator(f.ctrl, f.idx)
	rec := &recorded{}
	r.SetRecorder(rec)
	return f, r, rec
}

func withUID(p *corev1.Pod, uid string) *corev1.Pod { p.UID = types.UID(uid); return p }

func TestRelocationSurgesThenRetires(t *testing.T) {
	f, r, rec := relocFixture(t, us("guard", "web"), settled(1), withUID(pod("web-a", "n1", true), "a"), node("n1", false), node("n2", false))
	ctx := context.Background()
	took, err := r.Relocate(ctx, getPod(f, "web-a"), nil, "nothing left to shrink")
	if err != nil || !took {
		t.Fatalf("Relocate = %v, %v; want taken", took, err)
	}
	u := f.understudy("guard")
	if u.Status.Phase != ballastv1.UnderstudySurging || u.Status.DoomClass != ClassRelocation || u.Status.DoomedPod != "web-a" ||
		u.Status.DoomedNode != "n1" || u.Status.OriginalReplicas == nil || *u.Status.OriginalReplicas != 1 {
		t.Fatalf("status after Relocate: %+v", u.Status)
	}
	if r := *f.deployment().Spec.Replicas; r != 2 {
		t.Errorf("replicas = %d, want 2", r)
	}
	if c := getPod(f, "web-a").Annotations[ballastv1.PodDeletionCostAnnotation]; c != "-1000" {
		t.Errorf("deletion cost %q", c)
	}
	// Asked again (the ladder re-runs on every pod update): taken, no second surge.
	if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "again"); !took {
		t.Error("second Relocate of the pod being relocated declined")
	}
	if n := testutil.ToFloat64(f.m.Surges.WithLabelValues("app", "guard")); n != 1 {
		t.Errorf("surges = %v, want 1", n)
	}
	// The node has no doom signal: the surge must not be taken for a withdrawn one.
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudySurging || *f.deployment().Spec.Replicas != 2 {
		t.Fatalf("reconcile without a stand-in: phase %s replicas %d", u.Status.Phase, *f.deployment().Spec.Replicas)
	}
	// The eviction of the old pod is held meanwhile, as in any surge.
	if d, _ := f.ev.Decide(ctx, "app", "web-a"); !d.Held {
		t.Error("eviction of the pod being relocated was not held")
	}
	f.c.Status().Update(ctx, withRV(f, f.understudy("guard"))) //nolint:errcheck // refresh only
	// A not-Ready stand-in does not retire anything.
	mustCreate(f, pod("web-b", "n2", false))
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudySurging || len(rec.calls) != 0 {
		t.Fatalf("not-Ready stand-in: phase %s, recorded %v", u.Status.Phase, rec.calls)
	}
	// Ready: the outcome is recorded once and the Deployment scaled back.
	b := getPod(f, "web-b")
	b.Status.Conditions[0].Status = corev1.ConditionTrue
	if err := f.c.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	u = f.reconcile("guard")
	if u.Status.Phase != ballastv1.UnderstudyIdle || u.Status.OriginalReplicas != nil || u.Status.LastReleaseTime == nil {
		t.Fatalf("after the stand-in is Ready: %+v", u.Status)
	}
	if r := *f.deployment().Spec.Replicas; r != 1 {
		t.Errorf("replicas = %d after the relocation, want 1", r)
	}
	if len(rec.calls) != 1 || rec.calls[0] != "web-a->web-b@n2" {
		t.Errorf("recorded %v, want one web-a->web-b@n2", rec.calls)
	}
	// Idle again while the ReplicaSet removes the old pod: no new surge, nothing recorded.
	f.reconcile("guard")
	if r := *f.deployment().Spec.Replicas; r != 1 || len(rec.calls) != 1 {
		t.Errorf("after retiring: replicas %d, recorded %v", r, rec.calls)
	}
	// The resize controller's cache still has the old pod, Deferred: asked again, the
	// relocation is taken (the pod is replaced) and nothing surges.
	if took, err := r.Relocate(ctx, getPod(f, "web-a"), nil, "stale cache"); err != nil || !took {
		t.Errorf("Relocate of the retired pod = %v, %v; want taken", took, err)
	}
	if r := *f.deployment().Spec.Replicas; r != 1 {
		t.Errorf("replicas = %d after asking to relocate the retired pod, want 1", r)
	}
	if n := testutil.ToFloat64(f.m.Surges.WithLabelValues("app", "guard")); n != 1 {
		t.Errorf("surges = %v after asking to relocate the retired pod, want 1", n)
	}
}

func TestRelocationRestartInReleasingNeverRaisesAgain(t *testing.T) {
	u := us("guard", "web")
	u.Status = ballastv1.UnderstudyStatus{Phase: ballastv1.UnderstudyReleasing, OriginalReplicas: ptrTo(int32(1)),
		DoomedPod: "web-a", DoomedNode: "n1", DoomClass: ClassRelocation, LastSurgeTime: &metav1.Time{Time: t0}}
	f, _, rec := relocFixture(t, u, settled(1), pod("web-a", "n1", true), pod("web-b", "n2", true), node("n1", false), node("n2", false))
	// The previous leader scaled back already (replicas 1) and died before writing Idle.
	got := f.reconcile("guard")
	if got.Status.Phase != ballastv1.UnderstudyIdle || *f.deployment().Spec.Replicas != 1 {
		t.Fatalf("phase %s replicas %d, want Idle at 1", got.Status.Phase, *f.deployment().Spec.Replicas)
	}
	if len(rec.calls) != 0 {
		t.Errorf("outcome recorded twice across the restart: %v", rec.calls)
	}
}

func TestRelocationRelaxedScalesBackAndBacksOff(t *testing.T) {
	f, r, rec := relocFixture(t, us("guard", "web"), settled(1), withUID(pod("web-a", "n1", true), "a"), node("n1", false), node("n2", false))
	ctx := context.Background()
	if took, err := r.Relocate(ctx, getPod(f, "web-a"), nil, "no room"); !took || err != nil {
		t.Fatalf("Relocate = %v, %v", took, err)
	}
	mustCreate(f, pod("web-b", "n2", false)) // never Ready
	f.clock.Step(601 * time.Second)
	u := f.reconcile("guard")
	if u.Status.Phase != ballastv1.UnderstudyIdle || u.Status.OriginalReplicas != nil || *f.deployment().Spec.Replicas != 1 {
		t.Fatalf("after the deadline: phase %s replicas %d, want Idle at 1", u.Status.Phase, *f.deployment().Spec.Replicas)
	}
	if n := testutil.ToFloat64(f.m.Relaxed.WithLabelValues("app", "guard", RelaxDeadline)); n != 1 || len(rec.calls) != 0 {
		t.Errorf("hold_relaxed{deadline} = %v, recorded %v", n, rec.calls)
	}
	// The ladder asks again: declined (it caps instead) until the backoff ends.
	if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "no room"); took {
		t.Error("relocated again right after a relaxed relocation")
	}
	f.clock.Step(relocationBackoff)
	if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "no room"); !took {
		t.Error("not relocated after the backoff")
	}
}

func TestRelocationDeclines(t *testing.T) {
	ctx := context.Background()
	t.Run("no Understudy", func(t *testing.T) {
		f, r, _ := relocFixture(t, settled(1), pod("web-a", "n1", true), node("n1", false))
		if took, err := r.Relocate(ctx, getPod(f, "web-a"), nil, "x"); took || err != nil {
			t.Errorf("Relocate = %v, %v; want declined", took, err)
		}
		if r := *f.deployment().Spec.Replicas; r != 1 {
			t.Errorf("replicas = %d", r)
		}
	})
	t.Run("kill switch", func(t *testing.T) {
		f, r, _ := relocFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", false),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: "ballast-system"}})
		cfg := config.New(f.clock, f.c, f.ctrl.state, config.NewMetrics(prometheus.NewRegistry()), "ballast-system", logr.Discard())
		if err := cfg.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "x"); took || *f.deployment().Spec.Replicas != 1 {
			t.Errorf("kill switch: took %v replicas %d", took, *f.deployment().Spec.Replicas)
		}
	})
	t.Run("rolling out", func(t *testing.T) {
		d := settled(1)
		d.Status.UpdatedReplicas = 0
		f, r, _ := relocFixture(t, us("guard", "web"), d, pod("web-a", "n1", true), node("n1", false))
		if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "x"); took {
			t.Error("relocated a Deployment mid-rollout")
		}
	})
	t.Run("not a singleton", func(t *testing.T) {
		f, r, _ := relocFixture(t, us("guard", "web"), settled(2), pod("web-a", "n1", true), node("n1", false))
		if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "x"); took {
			t.Error("relocated a two-replica Deployment")
		}
	})
	t.Run("kill switch during the relocation abandons it", func(t *testing.T) {
		f, r, _ := relocFixture(t, us("guard", "web"), settled(1), withUID(pod("web-a", "n1", true), "a"), node("n1", false))
		if took, _ := r.Relocate(ctx, getPod(f, "web-a"), nil, "x"); !took {
			t.Fatal("not taken")
		}
		mustCreate(f, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: "ballast-system"}})
		cfg := config.New(f.clock, f.c, f.ctrl.state, config.NewMetrics(prometheus.NewRegistry()), "ballast-system", logr.Discard())
		if err := cfg.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		u := f.reconcile("guard")
		if u.Status.Phase != ballastv1.UnderstudyIdle || *f.deployment().Spec.Replicas != 1 {
			t.Errorf("kill switch mid-relocation: phase %s replicas %d", u.Status.Phase, *f.deployment().Spec.Replicas)
		}
		if n := testutil.ToFloat64(f.m.Relaxed.WithLabelValues("app", "guard", RelaxKillSwitch)); n != 1 {
			t.Errorf("hold_relaxed{kill_switch} = %v", n)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }
