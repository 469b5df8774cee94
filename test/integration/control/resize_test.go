package control

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
			if metric(t, e.reg, "ballast_resize_skipped_total", map[string]string{"reason": "not_ready", "profile": name, "policy": ""}) == 0 {
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
		if got := metric(t, e.reg, "ballast_resize_applied_total", map[string]string{"profile": name, "namespace": ns, "policy": "default"}); got != 1 {
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
		if got := metric(t, e.reg, "ballast_resize_outcome_total", map[string]string{"outcome": "completed", "profile": name}); got != 1 {
			t.Errorf("completed outcomes = %v", got)
		}

		// Cooldown holds until one interval has passed on the clock; then 650m → 475m.
		e.clock.Advance(3 * time.Second)
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
		if got := metric(t, e.reg, "ballast_resize_outcome_total", map[string]string{"outcome": "deferred", "profile": name}); got != 1 {
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
			if n := metric(t, e.reg, "ballast_resize_skipped_total", map[string]string{"reason": "no_drift", "profile": name}); n < 2 {
				return fmt.Errorf("%v no_drift evaluations", n)
			}
			return nil
		})
		got := e.waitPod(t, key, "unchanged", func(*corev1.Pod) error { return nil })
		if got.Generation != p.Generation || got.ResourceVersion != p.ResourceVersion ||
			metric(t, e.reg, "ballast_resize_applied_total", map[string]string{"profile": name}) != 0 {
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
		if got := metric(t, e.reg, "ballast_resize_failed_total", map[string]string{"namespace": ns}); got != 1 {
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
			Node: "rz-big", At: e.clock.Now(), PeakBytes: 256 << 20, LimitBytes: 256 << 20, Kind: "container"}); err != nil {
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
	})

	t.Run("kill switch: no resize while active, resize after release", func(t *testing.T) {
		ns := e.namespace(t, "rz-ks")
		mustCreate(t, e.c, boundPod("ks", ns, "resize", "rz-ks", "rz-big", res2("1", "1Gi", "2Gi")))
		key := types.NamespacedName{Namespace: ns, Name: "ks"}
		p := e.running(t, key)
		name := p.Annotations[ballastv1.ProfileRefAnnotation]
		before := metric(t, e.reg, "ballast_resize_skipped_total", map[string]string{"reason": "kill_switch", "profile": name})
		mustCreate(t, e.c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: operatorNS}})
		eventually(t, 10*time.Second, "kill switch observed", func() error {
			if metric(t, e.reg, "ballast_kill_switch_active", nil) != 1 {
				return fmt.Errorf("not active")
			}
			return nil
		})
		e.readyProfile(t, name, 240, 192<<20)
		eventually(t, 30*time.Second, "profile evaluation suppressed", func() error {
			if metric(t, e.reg, "ballast_resize_skipped_total", map[string]string{"reason": "kill_switch", "profile": name}) <= before {
				return fmt.Errorf("no kill_switch skip yet")
			}
			return nil
		})
		if got := e.waitPod(t, key, "unchanged", func(*corev1.Pod) error { return nil }); cpuOf(got) != "1" ||
			got.Annotations[ballastv1.ResizeStateAnnotation] != "" || got.Generation != p.Generation {
			t.Fatalf("resized under the kill switch: cpu %s state %q generation %d→%d", cpuOf(got),
				got.Annotations[ballastv1.ResizeStateAnnotation], p.Generation, got.Generation)
		}
		if metric(t, e.reg, "ballast_kill_switch_suppressed_total", map[string]string{"action": "resize"}) == 0 {
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
		if metric(t, e.reg, "ballast_resize_ladder_total", map[string]string{"rung": "hand_over", "result": "refused"}) == 0 {
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
		e.clock.Advance(3 * time.Second)
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

// TestResizeLadder covers rung 1 (donors) and the ladder's time limit on a Deferred pod.
func TestResizeLadder(t *testing.T) {
	e := startResizeEnv(t)
	ctx := context.Background()

	t.Run("a growth that fits only after another profile's pending shrink goes after the donor, under the guard", func(t *testing.T) {
		e.makeNode(t, "rz-don", "2", "8Gi", 110, "linux")
		// The donor's policy resizes hourly: only the grower's plan can pull its shrink forward.
		dns := e.namespace(t, "rz-donor")
		mustCreate(t, e.c, &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: dns}, Spec: resizePolicy("1h")})
		var donor *corev1.Pod
		eventually(t, 30*time.Second, "donor bound to the hourly policy", func() error {
			_ = e.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "donor", Namespace: dns}}, client.GracePeriodSeconds(0))
			donor = boundPod("donor", dns, "resize", "rz-donor", "rz-don", res2("900m", "256Mi", "512Mi"))
			if err := e.c.Create(ctx, donor); err != nil {
				return err
			}
			if got := donor.Annotations[ballastv1.PolicyRefAnnotation]; got != dns+"/hourly" {
				return fmt.Errorf("policy-ref %q", got)
			}
			return nil
		})
		dkey := types.NamespacedName{Namespace: dns, Name: "donor"}
		// Ready while the donor is not Running yet: its own evaluation finds no candidate.
		e.readyProfile(t, donor.Annotations[ballastv1.ProfileRefAnnotation], 240, 256<<20)
		e.running(t, dkey)

		gns := e.namespace(t, "rz-grow2")
		mustCreate(t, e.c, boundPod("grow", gns, "resize", "rz-grow2", "rz-don", res2("900m", "256Mi", "512Mi")))
		gkey := types.NamespacedName{Namespace: gns, Name: "grow"}
		g := e.running(t, gkey)
		// 900m → 1325m needs 425m; the node has 200m free and the donor's 900m → 600m frees 300m.
		e.readyProfile(t, g.Annotations[ballastv1.ProfileRefAnnotation], 1400, 256<<20)
		e.waitPod(t, dkey, "donor shrunk", func(p *corev1.Pod) error {
			if cpuOf(p) != "600m" {
				return fmt.Errorf("cpu %s", cpuOf(p))
			}
			return nil
		})
		g = e.waitPod(t, gkey, "growth sent after the donor", func(p *corev1.Pod) error {
			if cpuOf(p) != "1325m" {
				return fmt.Errorf("cpu %s", cpuOf(p))
			}
			return nil
		})
		e.waitEvent(t, g, "Normal ResizeLadder donors: sent after the shrinks of other pods on the node")
		node := &corev1.Node{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: "rz-don"}, node); err != nil {
			t.Fatal(err)
		}
		if node.Spec.PodPreemptionPolicy == nil || !slices.Contains(node.Spec.PodPreemptionPolicy.DisableResizePreemption, ballastv1.ResizeGuardKey) {
			t.Fatalf("guard key not held: %+v", node.Spec.PodPreemptionPolicy)
		}
		// The kubelet actuates the donor, then the grower: both Completed, the guard goes.
		e.kubelet(t, dkey, actuate)
		e.kubelet(t, gkey, actuate)
		eventually(t, 20*time.Second, "guard key released", func() error {
			if err := e.c.Get(ctx, client.ObjectKey{Name: "rz-don"}, node); err != nil {
				return err
			}
			if node.Spec.PodPreemptionPolicy != nil && slices.Contains(node.Spec.PodPreemptionPolicy.DisableResizePreemption, ballastv1.ResizeGuardKey) {
				return fmt.Errorf("still held")
			}
			return nil
		})
	})

	t.Run("a Deferred growth past the ladder's time limit is reverted, not left to the kubelet's 3-minute recheck", func(t *testing.T) {
		e.makeNode(t, "rz-stuck", "8", "16Gi", 110, "linux")
		ns := e.namespace(t, "rz-stuck")
		mustCreate(t, e.c, boundPod("stuck", ns, "resize", "rz-stuck", "rz-stuck", res2("100m", "256Mi", "512Mi")))
		key := types.NamespacedName{Namespace: ns, Name: "stuck"}
		p := e.running(t, key)
		// cpu 400m usage → rec 500m: 100m → 300m.
		e.readyProfile(t, p.Annotations[ballastv1.ProfileRefAnnotation], 400, 256<<20)
		e.waitPod(t, key, "growth sent", func(p *corev1.Pod) error {
			if cpuOf(p) != "300m" {
				return fmt.Errorf("cpu %s", cpuOf(p))
			}
			return nil
		})
		// The node has room, yet the kubelet defers (a non-resource admission failure).
		e.kubelet(t, key, func(p *corev1.Pod) { deferResize(p, "Node didn't have enough resource: devices") })
		e.waitPod(t, key, "Deferred", func(p *corev1.Pod) error {
			if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateDeferred {
				return fmt.Errorf("state %q", s)
			}
			return nil
		})
		e.clock.Advance(61 * time.Second)
		// Any pod event re-evaluates it; the kubelet rewriting its message is one.
		e.kubelet(t, key, func(p *corev1.Pod) { p.Status.Conditions[len(p.Status.Conditions)-1].Message += " (retried)" })
		p = e.waitPod(t, key, "reverted to the allocated values", func(p *corev1.Pod) error {
			if cpuOf(p) != "100m" || p.Annotations[ballastv1.ResizeStateAnnotation] != ballastv1.ResizeStatePending {
				return fmt.Errorf("cpu %s state %q", cpuOf(p), p.Annotations[ballastv1.ResizeStateAnnotation])
			}
			return nil
		})
		e.waitEvent(t, p, "Warning ResizeLadder cap: Deferred growth on node rz-stuck reverted to the allocated values")
		if metric(t, e.reg, "ballast_resize_ladder_total", map[string]string{"rung": "cap", "result": "reverted"}) != 1 {
			t.Error("revert not counted")
		}
	})
}

// TestResizeDryRun: with --dry-run=resize the decision is made and counted, nothing is sent.
func TestResizeDryRun(t *testing.T) {
	e := startResizeEnv(t, func(o *app.Options) { o.DryRun = "resize" })
	e.makeNode(t, "rz-dry", "8", "16Gi", 110, "linux")
	ns := e.namespace(t, "rz-dry")
	mustCreate(t, e.c, boundPod("dry", ns, "resize", "rz-dry", "rz-dry", res2("1", "1Gi", "2Gi")))
	key := types.NamespacedName{Namespace: ns, Name: "dry"}
	p := e.running(t, key)
	name := p.Annotations[ballastv1.ProfileRefAnnotation]
	e.readyProfile(t, name, 240, 192<<20)
	eventually(t, 30*time.Second, "dry-run decision counted", func() error {
		if metric(t, e.reg, "ballast_resize_skipped_total", map[string]string{"reason": "dry_run", "profile": name}) == 0 {
			return fmt.Errorf("no dry_run skip yet")
		}
		return nil
	})
	got := &corev1.Pod{}
	if err := e.c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	if cpuOf(got) != "1" || got.Generation != p.Generation || got.Annotations[ballastv1.ResizeStateAnnotation] != "" {
		t.Fatalf("dry-run sent something: cpu %s generation %d→%d annotations %v", cpuOf(got), p.Generation, got.Generation, got.Annotations)
	}
	if evs := e.events(t, got); len(evs) != 0 {
		t.Errorf("dry-run emitted events: %q", evs)
	}
}

// TestResizePredictedRequests: with the flag on, the owner Deployment carries the pod-level
// requests a recreated pod will be admitted with.
func TestResizePredictedRequests(t *testing.T) {
	e := startResizeEnv(t, func(o *app.Options) { o.PredictedRequests = true })
	ctx := context.Background()
	ns := e.namespace(t, "rz-pred")
	labels := map[string]string{"app.kubernetes.io/name": "rz-pred", "app.kubernetes.io/component": "api", ballastv1.ModeLabel: "apply"}
	tmpl := boundPod("x", ns, "apply", "rz-pred", "", res2("1", "1Gi", "2Gi"))
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec}}}
	mustCreate(t, e.c, dep)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "shop-1", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "shop", UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: dep.Spec.Selector, Template: dep.Spec.Template}}
	mustCreate(t, e.c, rs)
	p := boundPod("shop-1-a", ns, "apply", "rz-pred", "", res2("1", "1Gi", "2Gi"))
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "shop-1", UID: rs.UID, Controller: ptr.To(true)}}
	mustCreate(t, e.c, p)
	e.readyProfile(t, p.Annotations[ballastv1.ProfileRefAnnotation], 240, 192<<20)
	eventually(t, 30*time.Second, "predicted requests on the Deployment", func() error {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return err
		}
		v := dep.Annotations["autoscaling.k8s.io/predicted-pod-requests"]
		var got map[string]string
		if err := json.Unmarshal([]byte(v), &got); err != nil {
			return fmt.Errorf("annotation %q: %v", v, err)
		}
		mem := resource.MustParse(got["memory"])
		// memory p75 of 192Mi samples, within the histogram's 2% bucket error.
		if got["cpu"] != "300m" || mem.Value() < 192<<20 || float64(mem.Value()) > 1.02*float64(192<<20) {
			return fmt.Errorf("annotation %q", v)
		}
		return nil
	})
}
