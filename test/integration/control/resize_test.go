package control

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// startResizeEnv starts a control plane on its own API server with the resize-preemption
// gate on, and sets the default policy's resize interval to 3s.
func startResizeEnv(t *testing.T, tune ...func(*app.Options)) *env {
	t.Helper()
	kube, err := harness.StartKube(resizeGate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kube.Stop)
	e := startEnv(t, kube, srv.Valkey.URL(), tune...)
	crp := &ballastv1.ClusterResourcePolicy{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: "default"}, crp); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(crp.DeepCopy())
	crp.Spec = resizePolicy("3s")
	if err := e.c.Patch(context.Background(), crp, patch); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestResize(t *testing.T) {
	e := startResizeEnv(t)
	ctx := context.Background()
	e.makeNode(t, "rz-big", "8", "16Gi", 110, "linux")

	t.Run("a drifted pod is stepped in place, Completed, then stepped again after the interval", func(t *testing.T) {
		ns := e.namespace(t, "rz-step")
		mustCreate(t, e.c, boundPod("web", ns, "resize", "rz-step", "rz-big", res2("1", "1Gi", "2Gi")))
		key := types.NamespacedName{Namespace: ns, Name: "web"}
		p := e.running(t, key)
		name := p.Annotations[ballastv1.ProfileRefAnnotation]
		// The profile's creation evaluated it while accruing: a profile-level not_ready skip.
		eventually(t, 20*time.Second, "not_ready counted", func() error {
			if metric(t, e.registry, "ballast_resize_skipped_total", map[string]string{"reason": "not_ready", "profile": name, "policy": ""}) == 0 {
				return fmt.Errorf("no not_ready skip")
			}
			return nil
		})
		e.readyProfile(t, name, 240, 192<<20)

		// cpu 1 → rec 300m, 50% of the gap: 650m; resize-state Pending; Resized.
		p = e.waitPod(t, key, "first step", func(p *corev1.Pod) error {
			if cpuOf(p) != "650m" || p.Annotations[ballastv1.ResizeStateAnnotation] != ballastv1.ResizeStatePending {
				return fmt.Errorf("cpu %s state %q", cpuOf(p), p.Annotations[ballastv1.ResizeStateAnnotation])
			}
			return nil
		})
		if p.Annotations[ballastv1.LastResizeAnnotation] != e.clock.Now().UTC().Format(time.RFC3339) {
			t.Errorf("last-resize %q", p.Annotations[ballastv1.LastResizeAnnotation])
		}
		e.waitEvent(t, p, "Normal Resized in-place resize applied by Ballast")
		if got := metric(t, e.registry, "ballast_resize_applied_total", map[string]string{"profile": name, "namespace": ns, "policy": "default"}); got != 1 {
			t.Errorf("applied = %v", got)
		}

		// The kubelet actuates it: Completed, once.
		e.kubelet(t, key, actuate)
		p = e.waitPod(t, key, "Completed", func(p *corev1.Pod) error {
			if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateCompleted {
				return fmt.Errorf("state %q", s)
			}
			return nil
		})
		e.waitEvent(t, p, "Normal ResizeCompleted")
		if got := metric(t, e.registry, "ballast_resize_outcome_total", map[string]string{"outcome": "completed", "profile": name}); got != 1 {
			t.Errorf("completed outcomes = %v", got)
		}

		// Cooldown holds until one interval has passed on the clock; then 650m → 475m.
		e.clock.Step(3 * time.Second)
		p = e.waitPod(t, key, "second step", func(p *corev1.Pod) error {
			if cpuOf(p) != "475m" {
				return fmt.Errorf("cpu %s", cpuOf(p))
			}
			return nil
		})

		// The kubelet defers it: recorded on the pod, the profile, an event and a metric.
		msg := "Node didn't have enough resource: cpu, requested: 475, used: 7900, capacity: 8000"
		e.kubelet(t, key, func(p *corev1.Pod) { deferResize(p, msg) })
		p = e.waitPod(t, key, "Deferred", func(p *corev1.Pod) error {
			if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateDeferred {
				return fmt.Errorf("state %q", s)
			}
			return nil
		})
		e.waitEvent(t, p, "Normal ResizeDeferred in-place resize deferred by the kubelet: "+msg)
		e.profile(t, name, "profile counts the Deferred pod", func(wp *ballastv1.WorkloadProfile) error {
			if wp.Status.Resize.DeferredPods != 1 || wp.Status.Resize.OldestDeferredSince == nil {
				return fmt.Errorf("resize status %+v", wp.Status.Resize)
			}
			return nil
		})
		if got := metric(t, e.registry, "ballast_resize_outcome_total", map[string]string{"outcome": "deferred", "profile": name}); got != 1 {
			t.Errorf("deferred outcomes = %v", got)
		}
		e.kubelet(t, key, actuate)
		e.profile(t, name, "profile no longer counts it", func(wp *ballastv1.WorkloadProfile) error {
			if wp.Status.Resize.DeferredPods != 0 {
				return fmt.Errorf("resize status %+v", wp.Status.Resize)
			}
			return nil
		})
	})

	t.Run("steady state: a pod at its recommendation costs no API write per interval", func(t *testing.T) {
		ns := e.namespace(t, "rz-steady")
		seed := boundPod("seed", ns, "measure", "rz-steady", "rz-big", res2("1", "1Gi", "2Gi"))
		mustCreate(t, e.c, seed)
		name := seed.Annotations[ballastv1.ProfileRefAnnotation]
		e.readyProfile(t, name, 240, 192<<20)
		// Admission sizes the resize pod to the recommendations: nothing drifts afterwards.
		mustCreate(t, e.c, boundPod("steady", ns, "resize", "rz-steady", "rz-big", res2("1", "1Gi", "2Gi")))
		key := types.NamespacedName{Namespace: ns, Name: "steady"}
		p := e.running(t, key)
		if cpuOf(p) != "300m" {
			t.Fatalf("admission did not size the pod: cpu %s", cpuOf(p))
		}
		eventually(t, 30*time.Second, "two evaluations without drift", func() error {
			if n := metric(t, e.registry, "ballast_resize_skipped_total", map[string]string{"reason": "no_drift", "profile": name}); n < 2 {
				return fmt.Errorf("%v no_drift evaluations", n)
			}
			return nil
		})
		got := e.waitPod(t, key, "unchanged", func(*corev1.Pod) error { return nil })
		if got.Generation != p.Generation || got.ResourceVersion != p.ResourceVersion ||
			metric(t, e.registry, "ballast_resize_applied_total", map[string]string{"profile": name}) != 0 {
			t.Fatalf("steady pod written: generation %d→%d resourceVersion %s→%s", p.Generation, got.Generation, p.ResourceVersion, got.ResourceVersion)
		}
	})

	t.Run("an API rejection is recorded as Error with the blocked backoff", func(t *testing.T) {
		e.makeNode(t, "rz-win", "8", "16Gi", 110, "windows")
		ns := e.namespace(t, "rz-win")
		mustCreate(t, e.c, boundPod("win", ns, "resize", "rz-win", "rz-win", res2("1", "1Gi", "2Gi")))
		key := types.NamespacedName{Namespace: ns, Name: "win"}
		p := e.running(t, key)
		e.readyProfile(t, p.Annotations[ballastv1.ProfileRefAnnotation], 240, 192<<20)
		p = e.waitPod(t, key, "Error recorded", func(p *corev1.Pod) error {
			if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateError {
				return fmt.Errorf("state %q", s)
			}
			return nil
		})
		if p.Annotations[ballastv1.ResizeBlockedAnnotation] == "" || p.Annotations[ballastv1.ResizeBlockedAtAnnotation] == "" {
			t.Errorf("blocked annotations missing: %v", p.Annotations)
		}
		if cpuOf(p) != "1" {
			t.Errorf("rejected resize changed the pod: cpu %s", cpuOf(p))
		}
		e.waitEvent(t, p, "Warning ResizeBlocked in-place resize failed: ")
		if got := metric(t, e.registry, "ballast_resize_failed_total", map[string]string{"namespace": ns}); got != 1 {
			t.Errorf("failed = %v", got)
		}
	})

	t.Run("an OOM kill raises the memory limit in place at once", func(t *testing.T) {
		ns := e.namespace(t, "rz-oom")
		mustCreate(t, e.c, boundPod("oom", ns, "resize", "rz-oom", "rz-big", res2("100m", "128Mi", "256Mi")))
		key := types.NamespacedName{Namespace: ns, Name: "oom"}
		p := e.running(t, key)
		// The profile is still accruing: a fast raise needs no readiness.
		wp := e.profile(t, p.Annotations[ballastv1.ProfileRefAnnotation], "profile hash", func(wp *ballastv1.WorkloadProfile) error {
			if wp.Status.MeasurementHash == "" {
				return fmt.Errorf("no hash")
			}
			return nil
		})
		if _, err := e.writer.AddOOM(ctx, wp.Status.MeasurementHash, series.OOMEvent{Container: "app", Pod: ns + "/oom",
			Node: "rz-big", At: e.clock.Now(), PeakBytes: 256 << 20, LimitBytes: 256 << 20, Kind: "container",
			PID: 4242, Comm: "stress", RSSBytes: 250 << 20}); err != nil {
			t.Fatal(err)
		}
		// max(256Mi × 1.2, 256Mi + 100Mi) = 356Mi; the request stays (Burstable).
		p = e.waitPod(t, key, "memory limit raised", func(p *corev1.Pod) error {
			if memLimOf(p) != 356<<20 {
				return fmt.Errorf("memory limit %d", memLimOf(p))
			}
			return nil
		})
		if r := p.Spec.Containers[0].Resources.Requests.Memory().String(); r != "128Mi" {
			t.Errorf("request %s", r)
		}
		e.waitEvent(t, p, "Normal ResizeRaised container app was OOM-killed")
		// The eBPF victim details travel from the stream entry into the event.
		e.waitEvent(t, p, "(victim pid 4242 (stress), rss 262144000 bytes, container limit hit; peak 268435456 bytes, limit 256Mi)")
	})

	t.Run("kill switch: no resize while active, resize after release", func(t *testing.T) {
		ns := e.namespace(t, "rz-ks")
		mustCreate(t, e.c, boundPod("ks", ns, "resize", "rz-ks", "rz-big", res2("1", "1Gi", "2Gi")))
		key := types.NamespacedName{Namespace: ns, Name: "ks"}
		p := e.running(t, key)
		name := p.Annotations[ballastv1.ProfileRefAnnotation]
		before := metric(t, e.registry, "ballast_resize_skipped_total", map[string]string{"reason": "kill_switch", "profile": name})
		mustCreate(t, e.c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: operatorNS}})
		eventually(t, 10*time.Second, "kill switch observed", func() error {
			if metric(t, e.registry, "ballast_kill_switch_active", nil) != 1 {
				return fmt.Errorf("not active")
			}
			return nil
		})
		e.readyProfile(t, name, 240, 192<<20)
		eventually(t, 30*time.Second, "profile evaluation suppressed", func() error {
			if metric(t, e.registry, "ballast_resize_skipped_total", map[string]string{"reason": "kill_switch", "profile": name}) <= before {
				return fmt.Errorf("no kill_switch skip yet")
			}
			return nil
		})
		if got := e.waitPod(t, key, "unchanged", func(*corev1.Pod) error { return nil }); cpuOf(got) != "1" ||
			got.Annotations[ballastv1.ResizeStateAnnotation] != "" || got.Generation != p.Generation {
			t.Fatalf("resized under the kill switch: cpu %s state %q generation %d→%d", cpuOf(got),
				got.Annotations[ballastv1.ResizeStateAnnotation], p.Generation, got.Generation)
		}
		if metric(t, e.registry, "ballast_kill_switch_suppressed_total", map[string]string{"action": "resize"}) == 0 {
			t.Error("suppressed{action=resize} not counted")
		}
		ks := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: operatorNS}}
		if err := e.c.Delete(ctx, ks); err != nil {
			t.Fatal(err)
		}
		e.waitPod(t, key, "resized after release", func(p *corev1.Pod) error {
			if cpuOf(p) != "650m" {
				return fmt.Errorf("cpu %s", cpuOf(p))
			}
			return nil
		})
	})

	t.Run("a growth that cannot fit: guard held, PDB-protected victim refused, capped; unprotected victim handed over", func(t *testing.T) {
		e.makeNode(t, "rz-ho", "2", "8Gi", 110, "linux")
		ns := e.namespace(t, "rz-ho")
		for name, v := range map[string]int32{"rz-low": 100, "rz-high": 1000} {
			mustCreate(t, e.c, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v})
		}
		victim := boundPod("victim", ns, "", "rz-victim", "rz-ho", res2("1", "256Mi", ""))
		victim.Spec.PriorityClassName = "rz-low"
		mustCreate(t, e.c, victim)
		e.running(t, types.NamespacedName{Namespace: ns, Name: "victim"})
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "rz-victim"}}}}
		mustCreate(t, e.c, pdb)
		grower := boundPod("grower", ns, "resize", "rz-grow", "rz-ho", res2("900m", "256Mi", "512Mi"))
		grower.Spec.PriorityClassName = "rz-high"
		mustCreate(t, e.c, grower)
		key := types.NamespacedName{Namespace: ns, Name: "grower"}
		p := e.running(t, key)
		name := p.Annotations[ballastv1.ProfileRefAnnotation]
		// cpu 1400m usage → rec 1750m; step 900m → 1325m needs 425m, the node has 100m.
		e.readyProfile(t, name, 1400, 256<<20)
		p = e.waitPod(t, key, "capped growth", func(p *corev1.Pod) error {
			if cpuOf(p) != "1" {
				return fmt.Errorf("cpu %s", cpuOf(p))
			}
			return nil
		})
		e.waitEvent(t, p, "Warning ResizeLadder cap: growth capped at what node rz-ho can hold")
		node := &corev1.Node{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: "rz-ho"}, node); err != nil {
			t.Fatal(err)
		}
		if node.Spec.PodPreemptionPolicy == nil || !slices.Contains(node.Spec.PodPreemptionPolicy.DisableResizePreemption, ballastv1.ResizeGuardKey) {
			t.Fatalf("guard key not held: %+v", node.Spec.PodPreemptionPolicy)
		}
		if metric(t, e.registry, "ballast_resize_ladder_total", map[string]string{"rung": "hand_over", "result": "refused"}) == 0 {
			t.Error("hand-over refusal not counted")
		}

		// Without the PDB the victim is acceptable: the next growth is handed over.
		if err := e.c.Delete(ctx, pdb); err != nil {
			t.Fatal(err)
		}
		e.kubelet(t, key, actuate)
		e.waitPod(t, key, "Completed", func(p *corev1.Pod) error {
			if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateCompleted {
				return fmt.Errorf("state %q", s)
			}
			return nil
		})
		e.clock.Step(3 * time.Second)
		p = e.waitPod(t, key, "growth sent for hand-over", func(p *corev1.Pod) error {
			if cpuOf(p) != "1375m" {
				return fmt.Errorf("cpu %s", cpuOf(p))
			}
			return nil
		})
		e.waitEvent(t, p, "Normal ResizeLadder hand_over: guard released for scheduler resize preemption")
		eventually(t, 10*time.Second, "guard key released", func() error {
			if err := e.c.Get(ctx, client.ObjectKey{Name: "rz-ho"}, node); err != nil {
				return err
			}
			if node.Spec.PodPreemptionPolicy != nil && slices.Contains(node.Spec.PodPreemptionPolicy.DisableResizePreemption, ballastv1.ResizeGuardKey) {
				return fmt.Errorf("still held")
			}
			return nil
		})
	})
}
