package control

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// explainPod runs `kubectl ballast explain` against the suite's API server.
func (e *env) explainPod(t *testing.T, ns, name string) string {
	t.Helper()
	var out, errb bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}
	if code := ballast.Run(context.Background(), []string{"--kubeconfig", e.kube.Kubeconfig, "explain", "-n", ns, "pod/" + name}, streams); code != 0 {
		t.Fatalf("explain exited %d: %s", code, errb.String())
	}
	return out.String()
}

// wake changes the pod so its watchers see an update event. A status write that changes
// nothing (actuate within the same second: StartedAt has second precision) is no event at
// all, and a reconciler waiting on a real-time requeue would not be woken by it.
func (e *env) wake(t *testing.T, key types.NamespacedName) {
	t.Helper()
	body := fmt.Sprintf(`{"metadata":{"annotations":{"test.ballast/wake":%q}}}`, time.Now().Format(time.RFC3339Nano))
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := e.c.Patch(context.Background(), p, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
		t.Fatal(err)
	}
}

// TestStartupBoost drives behaviors.startupBoost through the real API server and the
// webhook over TLS: a pod is admitted boosted with the startup-boost annotation, and once
// its Ready condition is older than readyFor on the controller's clock the resize
// controller resizes it in place back to the un-boosted cpu and marks the boost ended.
func TestStartupBoost(t *testing.T) {
	e := startResizeEnv(t)
	ctx := context.Background()
	crp := &ballastv1.ClusterResourcePolicy{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: "default"}, crp); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(crp.DeepCopy())
	crp.Spec.Behaviors.StartupBoost = &ballastv1.StartupBoost{CPU: "2x", ReadyFor: "30s"}
	if err := e.c.Patch(ctx, crp, patch); err != nil {
		t.Fatal(err)
	}
	e.makeNode(t, "sb-node", "4", "16Gi", 110, "linux")
	// The webhook reads the policy from its cache: wait until a pod is boosted.
	ns := e.namespace(t, "sb")
	var p *corev1.Pod
	eventually(t, 20*time.Second, "the policy's boost reaches admission", func() error {
		_ = e.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, client.GracePeriodSeconds(0))
		p = boundPod("web", ns, "apply", "sb", "sb-node", res2("500m", "256Mi", "512Mi"))
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
		if err := e.c.Create(ctx, p); err != nil {
			return err
		}
		if _, ok := p.Annotations[ballastv1.StartupBoostAnnotation]; !ok {
			return fmt.Errorf("not boosted: cpu %s", cpuOf(p))
		}
		return nil
	})
	key := types.NamespacedName{Namespace: ns, Name: "web"}

	t.Run("admitted with cpu request and limit doubled, un-boosted values recorded", func(t *testing.T) {
		lim := p.Spec.Containers[0].Resources.Limits.Cpu().String()
		if cpuOf(p) != "1" || lim != "2" {
			t.Fatalf("boosted cpu %s/%s, want 1/2", cpuOf(p), lim)
		}
		rec, readyFor, err := sizing.ParseBoostRecord(p.Annotations[ballastv1.StartupBoostAnnotation])
		if err != nil || readyFor != 30*time.Second {
			t.Fatalf("record: %v, readyFor %s", err, readyFor)
		}
		want := sizing.BoostContainer{Request: "500m", Limit: "1", BoostedRequest: "1", BoostedLimit: "2"}
		if rec.Containers["app"] != want || rec.Ended != "" {
			t.Errorf("record %+v, want app %+v and not ended", rec, want)
		}
		if p.Status.QOSClass != corev1.PodQOSBurstable {
			t.Errorf("QoS %s", p.Status.QOSClass)
		}
		out := e.explainPod(t, ns, "web")
		for _, want := range []string{
			"Startup boost (cpu 2x until Ready for 30s)",
			"At admission: cpu 2x until Ready for 30s (boosted).",
			"app cpu boosted to request 1, limit 2; taken back to request 500m, limit 1",
			"Active: taken back in place at 30s after the pod turns Ready.",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("taken back in place once Ready for readyFor", func(t *testing.T) {
		readyAt := e.clock.Now()
		e.kubelet(t, key, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(readyAt)}}
			actuate(p)
		})
		// Ready for less than readyFor on the controller's clock: the boost stays. The
		// un-boost was woken by the Ready update and requeued for later.
		e.clock.Step(20 * time.Second)
		e.wake(t, key) // another pod update: still not due
		got := e.waitPod(t, key, "still boosted", func(p *corev1.Pod) error {
			if cpuOf(p) != "1" {
				return fmt.Errorf("cpu %s before readyFor", cpuOf(p))
			}
			return nil
		})
		if _, _, err := sizing.ParseBoostRecord(got.Annotations[ballastv1.StartupBoostAnnotation]); err != nil {
			t.Fatal(err)
		}
		e.clock.Step(11 * time.Second)
		e.wake(t, key) // wakes the reconciler (its own requeue is real time)
		got = e.waitPod(t, key, "un-boosted", func(p *corev1.Pod) error {
			lim := p.Spec.Containers[0].Resources.Limits.Cpu().String()
			rec, _, err := sizing.ParseBoostRecord(p.Annotations[ballastv1.StartupBoostAnnotation])
			if err != nil {
				return err
			}
			if cpuOf(p) != "500m" || lim != "1" || rec.Ended == "" {
				return fmt.Errorf("cpu %s/%s ended %q", cpuOf(p), lim, rec.Ended)
			}
			return nil
		})
		// Taken back on the controller's clock at Ready + 31s, not at + 20s (before readyFor).
		rec, _, _ := sizing.ParseBoostRecord(got.Annotations[ballastv1.StartupBoostAnnotation])
		if want := readyAt.Add(31 * time.Second).UTC().Format(time.RFC3339); rec.Ended != want {
			t.Errorf("ended %s, want %s (Ready + readyFor on the controller's clock)", rec.Ended, want)
		}
		if got.Spec.Containers[0].Resources.Limits.Memory().String() != "512Mi" {
			t.Errorf("memory touched: %v", got.Spec.Containers[0].Resources)
		}
		e.waitEvent(t, got, "Normal StartupBoostEnded startup boost taken back in place after Ready for 30s")
		if n := e.counterTotal(t, "ballast_startup_boost_ended_total"); n != 1 {
			t.Errorf("ended counter = %v", n)
		}
	})

	t.Run("a Guaranteed pod stays Guaranteed", func(t *testing.T) {
		g := boundPod("gua", ns, "apply", "sb-g", "sb-node", corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")}})
		mustCreate(t, e.c, g)
		r := g.Spec.Containers[0].Resources
		if r.Requests.Cpu().String() != "500m" || r.Limits.Cpu().String() != "500m" || g.Status.QOSClass != corev1.PodQOSGuaranteed {
			t.Errorf("cpu %s/%s QoS %s", r.Requests.Cpu(), r.Limits.Cpu(), g.Status.QOSClass)
		}
	})

	t.Run("the boost fits the largest node's allocatable", func(t *testing.T) {
		big := boundPod("big", ns, "apply", "sb-big", "sb-node", res2("3", "128Mi", ""))
		mustCreate(t, e.c, big)
		if cpuOf(big) != "4" {
			t.Errorf("cpu %s, want capped at the node's 4", cpuOf(big))
		}
		out := e.explainPod(t, ns, "big")
		if want := "capped to fit the largest node's allocatable cpu 4 (boost_capped)"; !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	})

	t.Run("a measure pod is never boosted", func(t *testing.T) {
		m := boundPod("measured", ns, "measure", "sb-m", "sb-node", res2("500m", "128Mi", ""))
		mustCreate(t, e.c, m)
		if _, ok := m.Annotations[ballastv1.StartupBoostAnnotation]; ok || cpuOf(m) != "500m" {
			t.Errorf("measure pod changed: cpu %s annotations %v", cpuOf(m), m.Annotations)
		}
	})
}
