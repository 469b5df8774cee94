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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
)

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

	t.Run("an Infeasible resize is recorded and its spec put back to the allocated values", func(t *testing.T) {
		e.makeNode(t, "rz-inf", "8", "16Gi", 110, "linux")
		ns := e.namespace(t, "rz-inf")
		mustCreate(t, e.c, boundPod("inf", ns, "resize", "rz-inf", "rz-inf", res2("1", "1Gi", "2Gi")))
		key := types.NamespacedName{Namespace: ns, Name: "inf"}
		p := e.running(t, key)
		name := p.Annotations[ballastv1.ProfileRefAnnotation]
		e.readyProfile(t, name, 240, 192<<20)
		e.waitPod(t, key, "resize sent", func(p *corev1.Pod) error {
			if cpuOf(p) != "650m" {
				return fmt.Errorf("cpu %s", cpuOf(p))
			}
			return nil
		})
		// The kubelet (static CPU manager, say) can never do it.
		e.kubelet(t, key, func(p *corev1.Pod) {
			p.Status.ObservedGeneration = p.Generation
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending,
				Status: corev1.ConditionTrue, Reason: "Infeasible", Message: "static CPU manager policy", ObservedGeneration: p.Generation})
		})
		p = e.waitPod(t, key, "Infeasible recorded, spec reverted", func(p *corev1.Pod) error {
			if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateInfeasible || cpuOf(p) != "1" {
				return fmt.Errorf("state %q cpu %s", s, cpuOf(p))
			}
			return nil
		})
		if p.Annotations[ballastv1.ResizeBlockedAnnotation] != "static CPU manager policy" || p.Annotations[ballastv1.ResizeBlockedAtAnnotation] == "" {
			t.Errorf("blocked annotations %v", p.Annotations)
		}
		e.waitEvent(t, p, "Warning ResizeInfeasible in-place resize infeasible: static CPU manager policy")
		e.waitEvent(t, p, "Warning ResizeLadder cap: Infeasible resize reverted to the allocated values")
		e.profile(t, name, "profile counts the Infeasible pod", func(wp *ballastv1.WorkloadProfile) error {
			if wp.Status.Resize.InfeasiblePods != 1 {
				return fmt.Errorf("resize status %+v", wp.Status.Resize)
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
		e.clock.Step(61 * time.Second)
		// Any pod event re-evaluates it; the kubelet rewriting its message is one.
		e.kubelet(t, key, func(p *corev1.Pod) { p.Status.Conditions[len(p.Status.Conditions)-1].Message += " (retried)" })
		p = e.waitPod(t, key, "reverted to the allocated values", func(p *corev1.Pod) error {
			if cpuOf(p) != "100m" || p.Annotations[ballastv1.ResizeStateAnnotation] != ballastv1.ResizeStatePending {
				return fmt.Errorf("cpu %s state %q", cpuOf(p), p.Annotations[ballastv1.ResizeStateAnnotation])
			}
			return nil
		})
		e.waitEvent(t, p, "Warning ResizeLadder cap: Deferred growth on node rz-stuck reverted to the allocated values")
		if n := metric(t, e.registry, "ballast_resize_ladder_total", map[string]string{"rung": "cap", "result": "reverted"}); n != 1 {
			t.Errorf("reverts counted %v, want 1", n)
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
		if metric(t, e.registry, "ballast_resize_skipped_total", map[string]string{"reason": "dry_run", "profile": name}) == 0 {
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
