package understudy

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
)

func TestSurgeReleaseScaleBack(t *testing.T) {
	f := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", false), node("n2", false))
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudyIdle || u.Status.OriginalReplicas != nil {
		t.Fatalf("healthy node: status %+v, want Idle without a surge", u.Status)
	}
	if r := *f.deployment().Spec.Replicas; r != 1 {
		t.Fatalf("replicas = %d before any doom", r)
	}

	// Cordon: surge. originalReplicas persisted, cost on the doomed pod, replicas 2.
	f.update(withRV(f, node("n1", true)))
	u := f.reconcile("guard")
	if u.Status.Phase != ballastv1.UnderstudySurging || u.Status.OriginalReplicas == nil || *u.Status.OriginalReplicas != 1 ||
		u.Status.DoomedPod != "web-a" || u.Status.DoomedNode != "n1" || u.Status.DoomClass != "voluntary" {
		t.Fatalf("after cordon: status %+v", u.Status)
	}
	if r := *f.deployment().Spec.Replicas; r != 2 {
		t.Errorf("replicas = %d during the surge, want 2", r)
	}
	p := getPod(f, "web-a")
	if p.Annotations[ballastv1.PodDeletionCostAnnotation] != "-1000" {
		t.Errorf("doomed pod annotations = %v", p.Annotations)
	}
	if n := testutil.ToFloat64(f.m.Surges.WithLabelValues("app", "guard")); n != 1 {
		t.Errorf("surges = %v, want 1", n)
	}
	// A second reconcile is idempotent (restart convergence): no second surge.
	f.reconcile("guard")
	if n := testutil.ToFloat64(f.m.Surges.WithLabelValues("app", "guard")); n != 1 || *f.deployment().Spec.Replicas != 2 {
		t.Errorf("second reconcile surged again: surges %v replicas %d", n, *f.deployment().Spec.Replicas)
	}

	// The eviction is held while the stand-in is not Ready.
	d, err := f.ev.Decide(context.Background(), "app", "web-a")
	if err != nil || !d.Held || d.Message() != "held by Understudy app/guard: waiting for a ready stand-in (stand-in not Ready yet)" {
		t.Fatalf("decision = %+v (%q), %v", d, d.Message(), err)
	}
	if u := f.understudy("guard"); u.Status.BlockedSince == nil {
		t.Error("the first hold must record blockedSince")
	}

	// A stand-in on a doomed node does not count; one on n2 that is Ready does.
	mustCreate(f, pod("web-b", "n1", true))
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudySurging {
		t.Errorf("stand-in on the doomed node released the hold: %s", u.Status.Phase)
	}
	mustCreate(f, pod("web-c", "n2", true))
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudyReleasing || u.Status.BlockedSince != nil {
		t.Errorf("ready stand-in: phase %s blockedSince %v, want Releasing and no blockedSince", u.Status.Phase, u.Status.BlockedSince)
	}
	if d, _ := f.ev.Decide(context.Background(), "app", "web-a"); d.Held {
		t.Error("eviction still held with a Ready stand-in")
	}

	// The doomed pod terminates: back to one replica, Idle, lastReleaseTime.
	p = getPod(f, "web-a")
	if err := f.c.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	u = f.reconcile("guard")
	if u.Status.Phase != ballastv1.UnderstudyIdle || u.Status.OriginalReplicas != nil || u.Status.LastReleaseTime == nil {
		t.Errorf("after the doomed pod is gone: %+v", u.Status)
	}
	if r := *f.deployment().Spec.Replicas; r != 1 {
		t.Errorf("replicas = %d after scale-back, want 1", r)
	}
}

func TestReadinessDeadlineRelaxes(t *testing.T) {
	f := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", true), node("n2", false))
	f.reconcile("guard")
	mustCreate(f, pod("web-b", "n2", false))
	if d, _ := f.ev.Decide(context.Background(), "app", "web-a"); !d.Held {
		t.Fatal("not held before the deadline")
	}
	f.clock.Step(601 * time.Second)
	// The webhook relaxes on its own, even before the leader does.
	if d, _ := f.ev.Decide(context.Background(), "app", "web-a"); d.Held {
		t.Error("webhook still holding after readinessDeadlineSeconds")
	}
	u := f.reconcile("guard")
	if u.Status.Phase != ballastv1.UnderstudyRelaxed {
		t.Errorf("phase %s after the deadline, want Relaxed", u.Status.Phase)
	}
	if n := testutil.ToFloat64(f.m.Relaxed.WithLabelValues("app", "guard", RelaxDeadline)); n != 1 {
		t.Errorf("hold_relaxed{deadline} = %v", n)
	}
}

func TestKillSwitchReleasesAndBlocksSurges(t *testing.T) {
	f := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", true),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: "ballast-system"}})
	cfg := config.New(f.clock, f.c, f.ctrl.state, config.NewMetrics(prometheus.NewRegistry()), "ballast-system", logr.Discard())
	if err := cfg.Reconcile(context.Background()); err != nil || !f.ctrl.state.Get().Active() {
		t.Fatalf("kill switch not active: %v", err)
	}
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudyIdle || *f.deployment().Spec.Replicas != 1 {
		t.Errorf("kill switch: surged anyway: %+v", u.Status)
	}
	if d, _ := f.ev.Decide(context.Background(), "app", "web-a"); d.Held {
		t.Error("kill switch: eviction held")
	}
}

func TestUnsupported(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "h"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, MaxReplicas: 3}}
	sts := us("sts", "db")
	sts.Spec.TargetRef.Kind = "StatefulSet"
	young := us("young", "web")
	young.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
	cases := map[string]struct {
		name   string
		reason string
		objs   []any
	}{
		"missing target": {name: "guard", reason: ReasonTargetMissing},
		"statefulset":    {name: "sts", reason: ReasonNotDeployment},
		"two replicas":   {name: "guard", reason: ReasonNotSingleton, objs: []any{settled(2)}},
		"hpa":            {name: "guard", reason: ReasonHPATargeted, objs: []any{settled(1), hpa}},
		"younger twin":   {name: "young", reason: ReasonDuplicate, objs: []any{settled(1)}},
	}
	for name, tc := range cases {
		f := newFixture(t, append(clientObjects(tc.objs), us("guard", "web"), sts, young)...)
		u := f.reconcile(tc.name)
		c := meta.FindStatusCondition(u.Status.Conditions, ballastv1.ConditionSupported)
		if u.Status.Phase != ballastv1.UnderstudyUnsupported || c == nil || c.Reason != tc.reason {
			t.Errorf("%s: phase %s condition %+v, want Unsupported/%s", name, u.Status.Phase, c, tc.reason)
		}
	}
	// Ballast's own namespace.
	own := us("self", "ballast-control")
	own.Namespace = "ballast-system"
	f := newFixture(t, own)
	if _, err := f.ctrl.Reconcile(context.Background(), own); err != nil {
		t.Fatal(err)
	}
	if own.Status.Phase != ballastv1.UnderstudyUnsupported {
		t.Errorf("own workload: phase %s", own.Status.Phase)
	}
}

func TestStandsDownWhileRollingOut(t *testing.T) {
	d := settled(1)
	d.Generation = 2 // the rollout has not been observed yet
	f := newFixture(t, us("guard", "web"), d, pod("web-a", "n1", true), node("n1", true))
	u := f.reconcile("guard")
	if u.Status.OriginalReplicas != nil || *f.deployment().Spec.Replicas != 1 {
		t.Errorf("surged during a rollout: %+v", u.Status)
	}
	if dec, _ := f.ev.Decide(context.Background(), "app", "web-a"); dec.Held {
		t.Error("held during a rollout")
	}
}

func TestConvergesAfterRestartMidSurge(t *testing.T) {
	// The old leader persisted originalReplicas and crashed before patching anything.
	u := us("guard", "web")
	u.Status = ballastv1.UnderstudyStatus{Phase: ballastv1.UnderstudySurging, OriginalReplicas: ptr.To[int32](1),
		DoomedPod: "web-a", DoomedNode: "n1", DoomClass: "voluntary", LastSurgeTime: &metav1.Time{Time: t0}}
	f := newFixture(t, u, settled(1), pod("web-a", "n1", true), node("n1", true))
	f.reconcile("guard")
	if r := *f.deployment().Spec.Replicas; r != 2 {
		t.Errorf("replicas = %d, want the surge completed (2)", r)
	}
	if getPod(f, "web-a").Annotations[ballastv1.PodDeletionCostAnnotation] != "-1000" {
		t.Error("deletion cost not set after restart")
	}
	// The node was uncordoned meanwhile: back to one.
	f.update(withRV(f, node("n1", false)))
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudyIdle || *f.deployment().Spec.Replicas != 1 {
		t.Errorf("withdrawn doom: phase %s replicas %d", u.Status.Phase, *f.deployment().Spec.Replicas)
	}
}

func TestDeadlineTooCloseRelaxesAtOnce(t *testing.T) {
	soon := t0.Add(30 * time.Second).Format(time.RFC3339)
	n1 := node("n1", false)
	n1.Spec.Taints = []corev1.Taint{{Key: "example.com/spot-itn", Value: soon, Effect: corev1.TaintEffectNoSchedule}}
	f := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), n1, node("n2", false))
	f.ctrl.opts.Keys.Involuntary = []string{"example.com/spot-itn"}
	f.ev.opts.Keys.Involuntary = []string{"example.com/spot-itn"}
	u := f.reconcile("guard")
	if u.Status.Phase != ballastv1.UnderstudyRelaxed || u.Status.DoomClass != "involuntary" || u.Status.DoomDeadline == nil {
		t.Fatalf("status %+v: want Relaxed with the involuntary deadline", u.Status)
	}
	if r := *f.deployment().Spec.Replicas; r != 2 {
		t.Errorf("replicas = %d: the stand-in must still be raised", r)
	}
	if n := testutil.ToFloat64(f.m.Relaxed.WithLabelValues("app", "guard", RelaxDeadlineTooClose)); n != 1 {
		t.Errorf("hold_relaxed{deadline_too_close} = %v", n)
	}
	if d, _ := f.ev.Decide(context.Background(), "app", "web-a"); d.Held {
		t.Error("held although the deadline is too close")
	}
}
