package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// The disruption budget and rate limits of resizes (docs/resize.md "Disruption budget"),
// through the real API server: PodDisruptionBudgets, maxConcurrentResizes, the shrink rate
// and the cooldown after a raise-back that a new leader reads from status.resizeHistory.

// restarting makes every cpu and memory change of the pod's app container restart it.
func restarting(p *corev1.Pod) *corev1.Pod {
	p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	return p
}

// ownedBy gives the pod a controller reference to a StatefulSet (one workload).
func ownedBy(p *corev1.Pod, name string) *corev1.Pod {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name,
		UID: types.UID("3f2504e0-4f89-41d3-9a0c-0305e82c3301"), Controller: ptr.To(true)}}
	return p
}

// setResizeBehavior edits the default policy's behaviors.resize.
func (e *env) setResizeBehavior(t *testing.T, edit func(*ballastv1.ResizeBehavior)) {
	t.Helper()
	crp := &ballastv1.ClusterResourcePolicy{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: "default"}, crp); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(crp.DeepCopy())
	edit(&crp.Spec.Behaviors.Resize)
	if err := e.c.Patch(context.Background(), crp, patch); err != nil {
		t.Fatal(err)
	}
}

// waitHeld polls until ballast_resize_held_total{reason, profile} reaches n.
func (e *env) waitHeld(t *testing.T, reason, profile string, n float64) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%v %s holds", n, reason), func() error {
		if got := metric(t, e.registry, "ballast_resize_held_total", map[string]string{"reason": reason, "profile": profile}); got < n {
			return fmt.Errorf("held{%s} = %v", reason, got)
		}
		return nil
	})
}

// TestResizeBudgetPDB: a resize that restarts the container waits while a
// PodDisruptionBudget covering the pod allows no disruption (maxUnavailable 0): nothing
// is sent, the hold is an event and a count; a pod under the same PDB whose resize is in
// place is resized; once the PDB is gone the held pod is resized on the next pass.
func TestResizeBudgetPDB(t *testing.T) {
	e := startResizeEnv(t)
	ctx := context.Background()
	e.makeNode(t, "rz-pdb", "8", "16Gi", 110, "linux")
	ns := e.namespace(t, "rz-pdb")
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "rz-pdb"}}}}
	mustCreate(t, e.c, pdb)
	mustCreate(t, e.c, restarting(boundPod("web", ns, "resize", "rz-pdb", "rz-pdb", res2("1", "1Gi", "2Gi"))))
	mustCreate(t, e.c, boundPod("inplace", ns, "resize", "rz-pdb", "rz-pdb", res2("1", "1Gi", "2Gi")))
	key, inplace := types.NamespacedName{Namespace: ns, Name: "web"}, types.NamespacedName{Namespace: ns, Name: "inplace"}
	p := e.running(t, key)
	e.running(t, inplace)
	name := p.Annotations[ballastv1.ProfileRefAnnotation]
	e.readyProfile(t, name, 240, 192<<20)

	// The in-place pod under the same PDB is resized: only restarts are disruptions.
	e.waitPod(t, inplace, "in-place pod resized", func(p *corev1.Pod) error {
		if cpuOf(p) != "650m" {
			return fmt.Errorf("cpu %s", cpuOf(p))
		}
		return nil
	})
	// The restarting one is held, twice (two passes), and never sent.
	e.waitHeld(t, "budget", name, 2)
	cur := e.waitPod(t, key, "restarting pod untouched", func(p *corev1.Pod) error {
		if cpuOf(p) != "1" || p.Annotations[ballastv1.ResizeStateAnnotation] != "" || p.Generation != 1 {
			return fmt.Errorf("cpu %s state %q generation %d", cpuOf(p), p.Annotations[ballastv1.ResizeStateAnnotation], p.Generation)
		}
		return nil
	})
	e.waitEvent(t, cur, "Normal ResizeHeld budget: restarting resize held: a PodDisruptionBudget covering the pod allows no disruption now")
	if got := metric(t, e.registry, "ballast_resize_applied_total", map[string]string{"profile": name}); got != 1 {
		t.Errorf("applied = %v, want 1 (the in-place pod only)", got)
	}
	held := metric(t, e.registry, "ballast_resize_held_total", map[string]string{"profile": name})
	sent := metric(t, e.registry, "ballast_resize_applied_total", map[string]string{"profile": name})
	t.Logf("figures: PDB maxUnavailable 0: held %v, sent %v (in place)", held, sent)

	// The PDB is removed: the next pass sends the restarting resize.
	if err := e.c.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	e.waitPod(t, key, "restarting pod resized once the PDB is gone", func(p *corev1.Pod) error {
		if cpuOf(p) != "650m" || p.Annotations[ballastv1.ResizeStateAnnotation] != ballastv1.ResizeStatePending {
			return fmt.Errorf("cpu %s state %q", cpuOf(p), p.Annotations[ballastv1.ResizeStateAnnotation])
		}
		return nil
	})
}

// TestResizeBudgetConcurrency: three pods of one StatefulSet whose resizes restart them,
// under the default maxConcurrentResizes.perWorkload (10% of 3 pods, at least 1): one is
// sent, the others are held (concurrency); the next pass holds them by the shrink rate
// (one shrink pass per workload per interval); once the first is actuated and the interval
// has passed, one more is sent and the third is held by the cap again.
func TestResizeBudgetConcurrency(t *testing.T) {
	e := startResizeEnv(t)
	// One step to the target, so a resized pod has nothing left to shrink.
	e.setResizeBehavior(t, func(r *ballastv1.ResizeBehavior) { r.MaxChangePerCycle = "100%" })
	e.makeNode(t, "rz-cc", "8", "16Gi", 110, "linux")
	ns := e.namespace(t, "rz-cc")
	var keys []types.NamespacedName
	for _, n := range []string{"db-0", "db-1", "db-2"} {
		mustCreate(t, e.c, ownedBy(restarting(boundPod(n, ns, "resize", "rz-cc", "rz-cc", res2("1", "1Gi", "2Gi"))), "db"))
		keys = append(keys, types.NamespacedName{Namespace: ns, Name: n})
	}
	var name string
	for _, k := range keys {
		name = e.running(t, k).Annotations[ballastv1.ProfileRefAnnotation]
	}
	e.readyProfile(t, name, 240, 192<<20)

	resized := func() (out []types.NamespacedName) {
		for _, k := range keys {
			p := &corev1.Pod{}
			if err := e.c.Get(context.Background(), k, p); err != nil {
				t.Fatal(err)
			}
			if cpuOf(p) != "1" {
				out = append(out, k)
			}
		}
		return out
	}
	e.waitHeld(t, "concurrency", name, 2)
	first := resized()
	if len(first) != 1 {
		t.Fatalf("resized %v, want exactly one under perWorkload 10%% of 3", first)
	}
	// The next pass, with the first still in flight: the workload was shrunk within the
	// interval, so the rate holds both (it is checked before the cap).
	e.waitHeld(t, "shrink_rate", name, 2)
	if got := resized(); len(got) != 1 {
		t.Fatalf("resized %v within the interval", got)
	}
	// The kubelet actuates it and the interval passes on the controller's clock: the next
	// pass sends one more, and the cap holds the third behind it.
	e.kubelet(t, first[0], actuate)
	e.clock.Step(3 * time.Second)
	eventually(t, 30*time.Second, "a second pod resized after the interval", func() error {
		if got := resized(); len(got) != 2 {
			return fmt.Errorf("resized %v", got)
		}
		return nil
	})
	e.waitHeld(t, "concurrency", name, 3)
	if got := resized(); len(got) != 2 {
		t.Fatalf("resized %v, want two (one in flight)", got)
	}
	t.Logf("figures: perWorkload 10%% of 3: held{concurrency} %v, held{shrink_rate} %v, sent %v",
		metric(t, e.registry, "ballast_resize_held_total", map[string]string{"reason": "concurrency", "profile": name}),
		metric(t, e.registry, "ballast_resize_held_total", map[string]string{"reason": "shrink_rate", "profile": name}),
		metric(t, e.registry, "ballast_resize_applied_total", map[string]string{"profile": name}))
}

// restartControl stops the control plane and starts a new one on the same API server,
// store and clock: a leader change. The new one has a fresh registry and no memory.
func (e *env) restartControl(t *testing.T) *env {
	t.Helper()
	e.stop()
	n := &env{kube: e.kube, c: e.c, clock: e.clock, port: e.port, certDir: e.certDir, opts: e.opts,
		registry: prometheus.NewRegistry(), done: make(chan struct{})}
	var err error
	if n.store, err = store.Open(e.opts.RedisURL); err != nil {
		t.Fatal(err)
	}
	layout := series.DefaultLayout(ballastv1.DefaultRetentionWindow)
	if n.writer, err = store.NewWriter(n.store, layout); err != nil {
		t.Fatal(err)
	}
	if n.reader, err = store.NewReader(n.store, layout); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	if n.app, err = app.NewApp(mctx, n.opts, e.kube.Config, app.Deps{Registry: n.registry, Clock: n.clock}); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(n.done)
		if err := n.app.Manager.Start(mctx); err != nil {
			t.Log("manager stopped:", err)
		}
	}()
	t.Cleanup(n.stop)
	return n
}

// TestResizeBudgetFailover: Ballast shrinks a pod, the pod turns NotReady and is raised
// back; the leader changes right after. The new leader has no memory of it, but reads the
// raise-back from the profile's status.resizeHistory and does not shrink the workload
// again within the cooldown (raise_cooldown); once the cooldown has passed it does.
func TestResizeBudgetFailover(t *testing.T) {
	e := startResizeEnv(t)
	e.setResizeBehavior(t, func(r *ballastv1.ResizeBehavior) { r.Cooldown = "1h" })
	e.makeNode(t, "rz-fo", "8", "16Gi", 110, "linux")
	ns := e.namespace(t, "rz-fo")
	mustCreate(t, e.c, boundPod("web", ns, "resize", "rz-fo", "rz-fo", res2("1", "1Gi", "2Gi")))
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	name := e.running(t, key).Annotations[ballastv1.ProfileRefAnnotation]
	e.readyProfile(t, name, 240, 192<<20)
	e.waitPod(t, key, "shrink", func(p *corev1.Pod) error {
		if cpuOf(p) == "1" || p.Annotations[ballastv1.ResizeStateAnnotation] != ballastv1.ResizeStatePending {
			return fmt.Errorf("cpu %s state %q", cpuOf(p), p.Annotations[ballastv1.ResizeStateAnnotation])
		}
		return nil
	})
	e.kubelet(t, key, actuate)
	e.waitPod(t, key, "shrink Completed", func(p *corev1.Pod) error {
		if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateCompleted {
			return fmt.Errorf("state %q", s)
		}
		return nil
	})
	setReady := func(p *corev1.Pod, ready corev1.ConditionStatus) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = ready
			}
		}
	}
	e.kubelet(t, key, func(p *corev1.Pod) { setReady(p, corev1.ConditionFalse) })
	e.waitPod(t, key, "raised back", func(p *corev1.Pod) error {
		if cpuOf(p) != "1" {
			return fmt.Errorf("cpu %s", cpuOf(p))
		}
		return nil
	})
	wp := e.profile(t, name, "raise-back in status.resizeHistory", func(wp *ballastv1.WorkloadProfile) error {
		var kinds []string
		for _, h := range wp.Status.ResizeHistory {
			kinds = append(kinds, h.Kind)
		}
		if strings.Join(kinds, ",") != "shrink,raise-back" {
			return fmt.Errorf("history kinds %v", kinds)
		}
		return nil
	})
	if h := wp.Status.ResizeHistory[1]; h.Workload != ns+"/Pod/web" || h.Pod != "web" {
		t.Errorf("raise-back entry %+v", h)
	}

	// Leader change; the pod is Ready and actuated again, and past the interval.
	e = e.restartControl(t)
	e.kubelet(t, key, func(p *corev1.Pod) { actuate(p); setReady(p, corev1.ConditionTrue) })
	e.clock.Step(4 * time.Second)
	e.waitHeld(t, "raise_cooldown", name, 2)
	p := e.waitPod(t, key, "not shrunk again by the new leader", func(p *corev1.Pod) error {
		if cpuOf(p) != "1" {
			return fmt.Errorf("cpu %s", cpuOf(p))
		}
		return nil
	})
	e.waitEvent(t, p, "Normal ResizeHeld raise_cooldown: shrink held: raise-back of the workload at ")
	if got := metric(t, e.registry, "ballast_resize_applied_total", map[string]string{"profile": name}); got != 0 {
		t.Errorf("the new leader sent %v resizes within the cooldown", got)
	}
	t.Logf("figures: new leader within the cooldown: held{raise_cooldown} %v, sent %v",
		metric(t, e.registry, "ballast_resize_held_total", map[string]string{"reason": "raise_cooldown", "profile": name}),
		metric(t, e.registry, "ballast_resize_applied_total", map[string]string{"profile": name}))
	// Once the cooldown has passed, the new leader shrinks it.
	e.clock.Step(time.Hour)
	e.waitPod(t, key, "shrunk after the cooldown", func(p *corev1.Pod) error {
		if cpuOf(p) == "1" {
			return fmt.Errorf("cpu %s", cpuOf(p))
		}
		return nil
	})
}
