package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/control/hpa"
	"github.com/ballastk8s/ballast/pkg/control/resize"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// hpaWorkload is a Deployment → ReplicaSet chain (no kube-controller-manager runs here, so
// the test writes both, as the Deployment controller would) with an autoscaling/v2 HPA on
// the Deployment scaling on cpu averageUtilization util, and a ResourcePolicy in its
// namespace with behaviors.hpa mode.
type hpaWorkload struct {
	ns, app string
	rs      *appsv1.ReplicaSet
}

func (e *env) hpaWorkload(t *testing.T, prefix, mode string, util int32, opts ...func(*ballastv1.ResourcePolicySpec)) hpaWorkload {
	t.Helper()
	ns := e.namespace(t, prefix)
	w := hpaWorkload{ns: ns, app: prefix}
	labels := map[string]string{"app.kubernetes.io/name": w.app, "app.kubernetes.io/component": "api"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:1", Resources: res2("1", "1Gi", "2Gi")}}}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	mustCreate(t, e.c, dep)
	w.rs = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	mustCreate(t, e.c, w.rs)
	mustCreate(t, e.c, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(util)}}}},
		}})
	spec := resizePolicy("3s")
	spec.Behaviors.HPA = mode
	for _, o := range opts {
		o(&spec)
	}
	mustCreate(t, e.c, &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "hpa", Namespace: ns}, Spec: spec})
	return w
}

// pod is a pod of the workload's ReplicaSet in mode, requesting cpu 1 and memory 1Gi
// (limit 2Gi), bound to node when node is set.
func (w hpaWorkload) pod(name, mode, node string) *corev1.Pod {
	p := boundPod(name, w.ns, mode, w.app, node, res2("1", "1Gi", "2Gi"))
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: w.rs.Name, UID: w.rs.UID, Controller: ptr.To(true)}}
	return p
}

// admit creates the pod once the webhook's caches hold the workload's policy (policy-ref
// names it), recreating it until they do, and returns it as admitted.
func (e *env) admit(t *testing.T, w hpaWorkload, name, mode, node string, ok func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var p *corev1.Pod
	eventually(t, 30*time.Second, "pod "+name+" admitted under the workload's policy", func() error {
		p = w.pod(name, mode, node)
		_ = e.c.Delete(ctx, p, client.GracePeriodSeconds(0))
		eventually(t, 10*time.Second, "old "+name+" gone", func() error {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); err == nil {
				return fmt.Errorf("still there")
			}
			return nil
		})
		if err := e.c.Create(ctx, p); err != nil {
			return err
		}
		if ref := p.Annotations[ballastv1.PolicyRefAnnotation]; ref != w.ns+"/hpa" {
			return fmt.Errorf("policy-ref %q", ref)
		}
		if ok != nil {
			return ok(p)
		}
		return nil
	})
	return p
}

func (e *env) hpaOf(t *testing.T, w hpaWorkload) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "web"}, h); err != nil {
		t.Fatal(err)
	}
	return h
}

// objectEvents returns "Type Reason Message" of Ballast's events about the object uid.
func (e *env) objectEvents(t *testing.T, ns string, uid types.UID) []string {
	t.Helper()
	list := &corev1.EventList{}
	if err := e.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.UID == uid && ev.Source.Component == ballastv1.EventComponent {
			out = append(out, ev.Type+" "+ev.Reason+" "+ev.Message)
		}
	}
	return out
}

func memReqOf(p *corev1.Pod) string { return p.Spec.Containers[0].Resources.Requests.Memory().String() }

// TestHPAGuard drives behaviors.hpa through the real API server: the webhook at admission,
// the resize controller in place, and the scale-target patch of the HPA.
func TestHPAGuard(t *testing.T) {
	e := startResizeEnv(t, func(o *app.Options) { o.HPAScaleTarget, o.PredictedRequests = true, true })
	ctx := context.Background()
	e.makeNode(t, "hpa-node", "8", "16Gi", 110, "linux")
	// readyProfile's samples: cpu 240m, memory 192Mi ⇒ cpu request 300m, memory request
	// 192Mi, memory limit 231Mi.

	t.Run("preserve: the cpu request an HPA scales on is left as written at admission; memory is sized", func(t *testing.T) {
		w := e.hpaWorkload(t, "hpa-keep", ballastv1.HPAPreserve, 60)
		seed := e.admit(t, w, "seed", "measure", "", nil)
		name := seed.Annotations[ballastv1.ProfileRefAnnotation]
		e.readyProfile(t, name, 240, 192<<20)
		p := e.admit(t, w, "web-1", "apply", "", func(p *corev1.Pod) error {
			if memReqOf(p) != "192Mi" {
				return fmt.Errorf("memory request %s, want 192Mi (profile not in the cache yet?)", memReqOf(p))
			}
			return nil
		})
		if cpuOf(p) != "1" {
			t.Errorf("cpu request = %s, want 1 (preserved for the HPA)", cpuOf(p))
		}
		want := "cpu (hpa web, cpu utilization 60%)"
		if got := p.Annotations[ballastv1.PreservedByHPAAnnotation]; got != want {
			t.Errorf("preserved-by-hpa = %q, want %q", got, want)
		}
		wp := e.profile(t, name, "profile", func(*ballastv1.WorkloadProfile) error { return nil })
		eventually(t, 20*time.Second, "HPAConflict event on the profile", func() error {
			for _, ev := range e.objectEvents(t, "default", wp.UID) {
				if strings.Contains(ev, "Normal HPAConflict cpu request left as written: HorizontalPodAutoscaler web scales on cpu utilization 60%") {
					return nil
				}
			}
			return fmt.Errorf("events %q", e.objectEvents(t, "default", wp.UID))
		})
		if h := e.hpaOf(t, w); *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 {
			t.Errorf("HPA target changed under preserve: %d", *h.Spec.Metrics[0].Resource.Target.AverageUtilization)
		}
		// The prediction published for consolidators keeps the preserved cpu request too.
		e.reconcile(t, name)
		eventually(t, 20*time.Second, "predicted requests on the Deployment", func() error {
			d := &appsv1.Deployment{}
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "web"}, d); err != nil {
				return err
			}
			if got, want := d.Annotations[resize.PredictedRequestsAnnotation], `{"cpu":"1","memory":"192Mi"}`; got != want {
				return fmt.Errorf("predicted %q, want %q", got, want)
			}
			return nil
		})
	})

	t.Run("preserve: the resize controller moves memory in place and leaves cpu", func(t *testing.T) {
		w := e.hpaWorkload(t, "hpa-rz", ballastv1.HPAPreserve, 60)
		// Admitted while the profile does not exist yet: written as authored.
		p := e.admit(t, w, "web-1", "resize", "hpa-node", nil)
		key := client.ObjectKeyFromObject(p)
		e.running(t, key)
		e.readyProfile(t, p.Annotations[ballastv1.ProfileRefAnnotation], 240, 192<<20)
		// memory 1Gi → 192Mi: 50 % of the gap is 608Mi; without the guard cpu would go 1 → 650m.
		p = e.waitPod(t, key, "memory stepped in place", func(p *corev1.Pod) error {
			if memReqOf(p) == "1Gi" {
				return fmt.Errorf("memory request %s", memReqOf(p))
			}
			return nil
		})
		if cpuOf(p) != "1" {
			t.Errorf("cpu request = %s after the resize, want 1 (preserved for the HPA)", cpuOf(p))
		}
		if got := p.Annotations[ballastv1.PreservedByHPAAnnotation]; got != "cpu (hpa web, cpu utilization 60%)" {
			t.Errorf("preserved-by-hpa = %q", got)
		}
		e.waitEvent(t, p, "Normal HPAConflict cpu request left as written: HorizontalPodAutoscaler web scales on cpu utilization 60% (behaviors.hpa: preserve)")
	})

	t.Run("scale-target: the cpu request is sized and the HPA target keeps request × utilization", func(t *testing.T) {
		w := e.hpaWorkload(t, "hpa-scale", ballastv1.HPAScaleTarget, 60)
		seed := e.admit(t, w, "seed", "measure", "", nil)
		e.readyProfile(t, seed.Annotations[ballastv1.ProfileRefAnnotation], 240, 192<<20)
		p := e.admit(t, w, "web-1", "apply", "", func(p *corev1.Pod) error {
			if cpuOf(p) != "300m" {
				return fmt.Errorf("cpu request %s, want 300m", cpuOf(p))
			}
			return nil
		})
		if _, ok := p.Annotations[ballastv1.PreservedByHPAAnnotation]; ok {
			t.Errorf("preserved-by-hpa set under scale-target: %v", p.Annotations)
		}
		// 60 % of 1000m = 600m absolute; at 300m that is 200 %, exact.
		var h *autoscalingv2.HorizontalPodAutoscaler
		eventually(t, 20*time.Second, "HPA target rescaled", func() error {
			h = e.hpaOf(t, w)
			if u := *h.Spec.Metrics[0].Resource.Target.AverageUtilization; u != 200 {
				return fmt.Errorf("averageUtilization %d", u)
			}
			return nil
		})
		base, err := sizing.ParseHPABase(corev1.ResourceCPU, h.Annotations[sizing.HPABaseAnnotation(0)])
		if err != nil || base != (sizing.HPABase{Utilization: 60, Request: 1000, Set: 200}) {
			t.Errorf("hpa-base = %q (%+v, %v), want 60%% of 1, set 200%%", h.Annotations[sizing.HPABaseAnnotation(0)], base, err)
		}
		if got, want := 300*int64(*h.Spec.Metrics[0].Resource.Target.AverageUtilization), int64(1000*60); got != want {
			t.Errorf("request × utilization = %d, want %d", got, want)
		}
		if h.Spec.MaxReplicas != 10 || *h.Spec.MinReplicas != 2 || h.Spec.ScaleTargetRef.Name != "web" {
			t.Errorf("HPA spec changed beyond the target: %+v", h.Spec)
		}
		// Asked again (another pod, another replica): every rescale starts from the author's
		// base on the HPA, so nothing compounds (from 200 % it would become 667 %).
		r := hpa.Rescale{Namespace: w.ns, Target: sizing.HPATarget{HPA: "web", Resource: corev1.ResourceCPU, Utilization: 200},
			Before: 1000, After: 300}
		if err := e.app.Controllers.HPA.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
		if u := *e.hpaOf(t, w).Spec.Metrics[0].Resource.Target.AverageUtilization; u != 200 {
			t.Errorf("averageUtilization after a repeated rescale = %d, want 200", u)
		}
		// The request moves on (a resize to 400m): 600m ÷ 400m = 150 %.
		r.Before, r.After = 300, 400
		if err := e.app.Controllers.HPA.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
		if u := *e.hpaOf(t, w).Spec.Metrics[0].Resource.Target.AverageUtilization; u != 150 {
			t.Errorf("averageUtilization at 400m = %d, want 150", u)
		}
		// The author changes the target: their value is the new base, not overwritten.
		h = e.hpaOf(t, w)
		before := h.DeepCopy()
		*h.Spec.Metrics[0].Resource.Target.AverageUtilization = 90
		if err := e.c.Patch(ctx, h, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		r.Before, r.After = 400, 400
		// The scaler reads the HPA from the manager's cache first: until the cache has the
		// author's edit it sees nothing to do, so the rescale is asked again as the next
		// admission or resize would.
		eventually(t, 10*time.Second, "the author's target taken as the new base", func() error {
			if err := e.app.Controllers.HPA.Apply(ctx, r); err != nil {
				return err
			}
			h = e.hpaOf(t, w)
			if u, a := *h.Spec.Metrics[0].Resource.Target.AverageUtilization, h.Annotations[sizing.HPABaseAnnotation(0)]; u != 90 || a != "90% of 400m, set 90%" {
				return fmt.Errorf("averageUtilization %d, hpa-base %q; want 90 and 90%% of 400m, set 90%%", u, a)
			}
			return nil
		})
	})

	t.Run("startup boost: no boost on the cpu an HPA reads, a boost under ignore", func(t *testing.T) {
		boost := func(s *ballastv1.ResourcePolicySpec) {
			s.Behaviors.StartupBoost = &ballastv1.StartupBoost{CPU: "2x", ReadyFor: "1h"}
		}
		// No profile yet: only the boost could change the pod.
		kept := e.hpaWorkload(t, "hpa-boost", ballastv1.HPAPreserve, 60, boost)
		p := e.admit(t, kept, "web-1", "apply", "", nil)
		if cpuOf(p) != "1" || p.Annotations[ballastv1.StartupBoostAnnotation] != "" {
			t.Errorf("preserve: cpu request %s, startup-boost %q; want 1 and none", cpuOf(p), p.Annotations[ballastv1.StartupBoostAnnotation])
		}
		boosted := e.hpaWorkload(t, "hpa-boost-ignore", ballastv1.HPAIgnore, 60, boost)
		e.admit(t, boosted, "web-1", "apply", "", func(p *corev1.Pod) error {
			if cpuOf(p) != "2" || p.Annotations[ballastv1.StartupBoostAnnotation] == "" {
				return fmt.Errorf("ignore: cpu request %s, startup-boost %q; want 2 and a record", cpuOf(p), p.Annotations[ballastv1.StartupBoostAnnotation])
			}
			return nil
		})
	})

	t.Run("ignore: sized as if no HPA existed, the HPA untouched", func(t *testing.T) {
		w := e.hpaWorkload(t, "hpa-ignore", ballastv1.HPAIgnore, 60)
		seed := e.admit(t, w, "seed", "measure", "", nil)
		e.readyProfile(t, seed.Annotations[ballastv1.ProfileRefAnnotation], 240, 192<<20)
		p := e.admit(t, w, "web-1", "apply", "", func(p *corev1.Pod) error {
			if cpuOf(p) != "300m" {
				return fmt.Errorf("cpu request %s, want 300m", cpuOf(p))
			}
			return nil
		})
		if _, ok := p.Annotations[ballastv1.PreservedByHPAAnnotation]; ok {
			t.Errorf("preserved-by-hpa set under ignore: %v", p.Annotations)
		}
		h := e.hpaOf(t, w)
		if u := *h.Spec.Metrics[0].Resource.Target.AverageUtilization; u != 60 || len(h.Annotations) != 0 {
			t.Errorf("HPA touched under ignore: %d %v", u, h.Annotations)
		}
	})
}

// TestHPAGuardScaleTargetNotAllowed: without --hpa-scale-target (chart hpa.scaleTarget off)
// a policy asking for scale-target preserves, and the event says why; the HPA is untouched.
func TestHPAGuardScaleTargetNotAllowed(t *testing.T) {
	e := startResizeEnv(t)
	w := e.hpaWorkload(t, "hpa-off", ballastv1.HPAScaleTarget, 60)
	seed := e.admit(t, w, "seed", "measure", "", nil)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	e.readyProfile(t, name, 240, 192<<20)
	p := e.admit(t, w, "web-1", "apply", "", func(p *corev1.Pod) error {
		if memReqOf(p) != "192Mi" {
			return fmt.Errorf("memory request %s, want 192Mi", memReqOf(p))
		}
		return nil
	})
	if cpuOf(p) != "1" || p.Annotations[ballastv1.PreservedByHPAAnnotation] != "cpu (hpa web, cpu utilization 60%)" {
		t.Errorf("cpu request %s, preserved-by-hpa %q; want 1 and the HPA named", cpuOf(p), p.Annotations[ballastv1.PreservedByHPAAnnotation])
	}
	wp := e.profile(t, name, "profile", func(*ballastv1.WorkloadProfile) error { return nil })
	eventually(t, 20*time.Second, "HPAConflict event saying scale-target is not allowed", func() error {
		for _, ev := range e.objectEvents(t, "default", wp.UID) {
			if strings.Contains(ev, "HPAConflict") && strings.Contains(ev, "behaviors.hpa: scale-target, but this installation may not patch HPAs") {
				return nil
			}
		}
		return fmt.Errorf("events %q", e.objectEvents(t, "default", wp.UID))
	})
	if h := e.hpaOf(t, w); *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 || len(h.Annotations) != 0 {
		t.Errorf("HPA patched without --hpa-scale-target: %d %v", *h.Spec.Metrics[0].Resource.Target.AverageUtilization, h.Annotations)
	}
}
