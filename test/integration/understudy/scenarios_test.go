package understudy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func replicasOf(c context.Context, ns, name string) (int32, error) {
	d := &appsv1.Deployment{}
	if err := sb.Client.Get(c, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		return 0, err
	}
	return *d.Spec.Replicas, nil
}

func wantReplicas(t *testing.T, c context.Context, ns, name string, want int32) {
	t.Helper()
	waitFor(t, c, fmt.Sprintf("%s/%s at %d replicas", ns, name, want), func() error {
		r, err := replicasOf(c, ns, name)
		if err != nil {
			return err
		}
		if r != want {
			return fmt.Errorf("replicas %d", r)
		}
		return nil
	})
}

// TestKarpenterTaintSurgesFirst: Karpenter's disruption taint alone starts the surge; the
// stand-in is Ready before any eviction, so the drain that follows is never held.
func TestKarpenterTaintSurgesFirst(t *testing.T) {
	c := ctx(t, 3*time.Minute)
	defer uncordonAll(t, c)
	if _, err := sb.DeploySingleton(c, "team-kp", "web", nil); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-kp", "guard", "web", nil)
	wantPhase(t, c, "team-kp", "guard", ballastv1.UnderstudyIdle)
	old := onePod(t, c, "team-kp", "web")
	x := old.Spec.NodeName
	if out, err := kubectl(c, "taint", "node", x, "karpenter.sh/disrupted=:NoSchedule"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	defer kubectl(context.Background(), "taint", "node", x, "karpenter.sh/disrupted-")
	u := wantPhase(t, c, "team-kp", "guard", ballastv1.UnderstudyReleasing)
	if u.Status.DoomedPod != old.Name || u.Status.BlockedSince != nil {
		t.Errorf("status %+v: want the old pod doomed and nothing blocked (no eviction yet)", u.Status)
	}
	w := watch("team-kp", "web", old.Name)
	out, wall, err := drain(c, x, "--pod-selector=app=web")
	minReady, _, _ := w.end()
	if err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	t.Logf("drain after the Karpenter taint: wall %s, min Ready %d", wall.Round(time.Millisecond), minReady)
	if strings.Contains(out, "held by Understudy") || minReady < 1 {
		t.Errorf("drain after a surge: min Ready %d, output:\n%s", minReady, out)
	}
	wantPhase(t, c, "team-kp", "guard", ballastv1.UnderstudyIdle)
	if p := onePod(t, c, "team-kp", "web"); p.Spec.NodeName == x {
		t.Errorf("pod left on the disrupted node %s", x)
	}
}

// TestWebhookDownFailsOpen: with ballast-control stopped the drain proceeds unhindered.
func TestWebhookDownFailsOpen(t *testing.T) {
	c := ctx(t, 3*time.Minute)
	defer uncordonAll(t, c)
	if _, err := sb.DeploySingleton(c, "team-down", "web", nil); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-down", "guard", "web", nil)
	wantPhase(t, c, "team-down", "guard", ballastv1.UnderstudyIdle)
	old := onePod(t, c, "team-down", "web")
	sb.StopControl(false)
	defer func() {
		if err := sb.StartControl(context.Background()); err != nil {
			t.Fatal(err)
		}
	}()
	out, wall, err := drain(c, old.Spec.NodeName, "--pod-selector=app=web")
	if err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	t.Logf("drain with ballast-control stopped: wall %s", wall.Round(time.Millisecond))
	if strings.Contains(out, "held by") || strings.Contains(out, "will retry") {
		t.Errorf("drain was hindered:\n%s", out)
	}
}

// TestNeverReadyStandInRelaxes: a stand-in that never becomes Ready (its nodeSelector names
// only the drained node, so it stays Pending) holds the drain only until
// readinessDeadlineSeconds, then the hold is relaxed and the eviction goes through.
func TestNeverReadyStandInRelaxes(t *testing.T) {
	c := ctx(t, 3*time.Minute)
	defer uncordonAll(t, c)
	pin := sb.Nodes[0].Name
	if _, err := sb.DeploySingleton(c, "team-never", "web", func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{"kubernetes.io/hostname": pin}
	}); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-never", "guard", "web", func(u *ballastv1.Understudy) { u.Spec.ReadinessDeadlineSeconds = 8 })
	var old *corev1.Pod
	waitFor(t, c, "one pod", func() error {
		ps, err := pods(c, "team-never", "web")
		if err != nil || len(ps) != 1 || ps[0].Spec.NodeName == "" {
			return fmt.Errorf("%d pods (%v)", len(ps), err)
		}
		old = &ps[0]
		return nil
	})
	u := wantPhase(t, c, "team-never", "guard", ballastv1.UnderstudyIdle)
	if cond := meta.FindStatusCondition(u.Status.Conditions, ballastv1.ConditionReady); cond == nil || cond.Reason == "RollingOut" {
		waitFor(t, c, "target settled", func() error {
			u, err := phase(c, "team-never", "guard")
			if err != nil {
				return err
			}
			if cond := meta.FindStatusCondition(u.Status.Conditions, ballastv1.ConditionReady); cond == nil || cond.Reason == "RollingOut" {
				return fmt.Errorf("still standing down")
			}
			return nil
		})
	}
	out, wall, err := drain(c, old.Spec.NodeName, "--pod-selector=app=web")
	if err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	t.Logf("drain with a never-Ready stand-in (readinessDeadlineSeconds 8): wall %s", wall.Round(time.Millisecond))
	if !strings.Contains(out, "held by Understudy team-never/guard") {
		t.Errorf("drain never held:\n%s", out)
	}
	if wall < 8*time.Second {
		t.Errorf("drain finished in %s, before the readiness deadline", wall)
	}
	var evs corev1.EventList
	waitFor(t, c, "Relaxed event", func() error {
		if err := sb.Client.List(c, &evs, client.InNamespace("team-never")); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "Relaxed" && e.InvolvedObject.Name == "guard" && strings.Contains(e.Message, "deadline") {
				return nil
			}
		}
		return fmt.Errorf("no Relaxed event among %d", len(evs.Items))
	})
	wantReplicas(t, c, "team-never", "web", 1)
}

// TestUnsupportedTargets: replicas 2, an HPA, a StatefulSet, Ballast's own namespace.
func TestUnsupportedTargets(t *testing.T) {
	c := ctx(t, 2*time.Minute)
	d, err := sb.DeploySingleton(c, "team-unsup", "two", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Client.Patch(c, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`))); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.DeploySingleton(c, "team-unsup", "scaled", nil); err != nil {
		t.Fatal(err)
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "team-unsup", Name: "scaled"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled"},
			MinReplicas: ptr.To[int32](1), MaxReplicas: 3}}
	if err := sb.Client.Create(c, hpa); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-unsup", "two", "two", nil)
	protect(t, c, "team-unsup", "scaled", "scaled", nil)
	protect(t, c, "team-unsup", "db", "db", func(u *ballastv1.Understudy) { u.Spec.TargetRef.Kind = "StatefulSet" })
	protect(t, c, "ballast-system", "self", "ballast-control", nil)
	for key, reason := range map[[2]string]string{
		{"team-unsup", "two"}: "NotASingleton", {"team-unsup", "scaled"}: "HPATargeted",
		{"team-unsup", "db"}: "NotADeployment", {"ballast-system", "self"}: "BallastWorkload",
	} {
		u := wantPhase(t, c, key[0], key[1], ballastv1.UnderstudyUnsupported)
		if cond := meta.FindStatusCondition(u.Status.Conditions, ballastv1.ConditionSupported); cond == nil || cond.Reason != reason {
			t.Errorf("%s: Supported condition %+v, want reason %s", key[1], cond, reason)
		}
	}
	if r, _ := replicasOf(c, "team-unsup", "two"); r != 2 {
		t.Errorf("an unsupported target was scaled: %d", r)
	}
}

// TestCrashMidSurgeConverges: ballast-control is killed mid-surge; the doomed pod is
// evicted while it is down (fail-open); the restarted control plane converges the
// Deployment back to its original replica count from the Understudy's status alone.
func TestCrashMidSurgeConverges(t *testing.T) {
	c := ctx(t, 3*time.Minute)
	defer uncordonAll(t, c)
	if _, err := sb.DeploySingleton(c, "team-crash", "web", nil); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-crash", "guard", "web", nil)
	wantPhase(t, c, "team-crash", "guard", ballastv1.UnderstudyIdle)
	old := onePod(t, c, "team-crash", "web")
	if out, err := kubectl(c, "cordon", old.Spec.NodeName); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantPhase(t, c, "team-crash", "guard", ballastv1.UnderstudyReleasing)
	wantReplicas(t, c, "team-crash", "web", 2)
	sb.StopControl(true)
	if out, err := kubectl(c, "delete", "pod", "-n", "team-crash", old.Name, "--wait=true"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r, _ := replicasOf(c, "team-crash", "web"); r != 2 {
		t.Fatalf("replicas %d while ballast-control is down, want the surge (2) still in place", r)
	}
	start := time.Now()
	if err := sb.StartControl(c); err != nil {
		t.Fatal(err)
	}
	wantReplicas(t, c, "team-crash", "web", 1)
	wantPhase(t, c, "team-crash", "guard", ballastv1.UnderstudyIdle)
	t.Logf("converged back to 1 replica %s after the restart", time.Since(start).Round(10*time.Millisecond))
	if p := onePod(t, c, "team-crash", "web"); p.Spec.NodeName == old.Spec.NodeName {
		t.Errorf("remaining pod on the cordoned node %s", p.Spec.NodeName)
	}
}
