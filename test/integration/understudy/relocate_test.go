package understudy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/understudy"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/sandbox"
)

// TestRelocationMovesADeferredGrowth is the relocation rung (SPEC §15.5) end to end: a
// resize-mode singleton covered by an Understudy (hold mode off: relocation works in every
// mode) grows in place; the (simulated) kubelet defers it; its node fills up, so neither
// donors nor scheduler preemption can resolve it. After the donors' time limit the ladder
// hands it to the Understudy, which surges a stand-in sized at admission, lets it land on
// the node with room and retires the old pod. A watcher proves at least one pod was Ready
// throughout.
func TestRelocationMovesADeferredGrowth(t *testing.T) {
	relocation(t, "team-reloc", "mover", false, false)
}

// TestRelocationOptIn is the same without an Understudy: the pod template opts in with
// ballast.tightlinesoftware.com/relocate: "true" (SPEC §15.5, single replica only).
func TestRelocationOptIn(t *testing.T) {
	relocation(t, "team-reloc-optin", "mover-optin", true, false)
}

// TestRelocationAtPlanTime: the node is full before the growth is planned, so the planner
// never sends it; the ladder hands it to relocation at once (no Deferred, no DonorWait).
func TestRelocationAtPlanTime(t *testing.T) {
	relocation(t, "team-reloc-plan", "mover-plan", false, true)
}

func relocation(t *testing.T, ns, app string, optIn, fullFirst bool) {
	c := ctx(t, 5*time.Minute)
	defer uncordonAll(t, c)
	first, second := sb.Nodes[0].Name, sb.Nodes[1].Name
	// The pod must start on the first node: the second is cordoned until it runs there.
	if out, err := kubectl(c, "cordon", second); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := sb.Client.Create(c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sb.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	dep := resizeSingleton(ns, app)
	if optIn {
		dep.Spec.Template.Annotations = map[string]string{understudy.RelocateAnnotation: "true"}
	}
	if err := sb.Client.Create(c, dep); err != nil {
		t.Fatal(err)
	}
	old := onePod(t, c, ns, app)
	if old.Spec.NodeName != first {
		t.Fatalf("pod on %s, want %s", old.Spec.NodeName, first)
	}
	if out, err := kubectl(c, "uncordon", second); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !optIn {
		protect(t, c, ns, "guard", app, func(u *ballastv1.Understudy) { u.Spec.HoldMode = ballastv1.HoldOff })
		wantPhase(t, c, ns, "guard", ballastv1.UnderstudyIdle)
	}

	// The node fills up (a pod bound by nodeName, as a static pod would be): the growth
	// cannot fit, and nothing on the node can be shrunk or preempted for it.
	fill := filler(ns, first, "7")
	fillUp := func() {
		if err := sb.Client.Create(c, fill); err != nil {
			t.Fatal(err)
		}
	}
	if fullFirst {
		fillUp()
	}
	// Usage 2 cpu: the recommendation is 2500m, the first in-place step 500m → 1500m.
	feedProfile(t, c, old, 2000, 256<<20)
	deferred := old // the ask the node could not give: the Deferred spec, or the pod before
	if !fullFirst {
		deferred = waitPodState(t, c, ns, old.Name, ballastv1.ResizeStateDeferred)
		t.Logf("growth sent and Deferred: cpu request %s on %s", cpuRequest(deferred), first)
		fillUp()
	}
	// The next test must find the node empty again (the namespace goes asynchronously).
	t.Cleanup(func() {
		cc, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := kubectl(cc, "delete", "pod", "-n", ns, fill.Name, "--grace-period=0", "--wait=true"); err != nil {
			t.Errorf("removing the filler: %v\n%s", err, out)
		}
	})

	w := watch(ns, app, old.Name)
	evs := watchReady(t, ns, app, old.Name) // starts with the old pod's ADDED event: Ready 1
	start := time.Now()
	var now *corev1.Pod
	waitFor(t, c, "workload relocated to "+second, func() error {
		ps, err := pods(c, ns, app)
		if err != nil {
			return err
		}
		if len(ps) != 1 || ps[0].Name == old.Name || !ready(&ps[0]) {
			names := []string{}
			for _, p := range ps {
				names = append(names, fmt.Sprintf("%s@%s ready=%v", p.Name, p.Spec.NodeName, ready(&p)))
			}
			return fmt.Errorf("pods %v", names)
		}
		now = &ps[0]
		return nil
	})
	moved := time.Since(start)
	minReady, maxReady, samples := w.end()
	evMin, evMax, events := evs.end()
	t.Logf("relocated %s → %s (%s) %s after the node filled up (a Deferred growth waits out the ladder's 1m DonorWait first); Ready pods min %d max %d "+
		"over %d samples (100 ms), min %d max %d over %d watch events", old.Name, now.Name, now.Spec.NodeName,
		moved.Round(10*time.Millisecond), minReady, maxReady, samples, evMin, evMax, events)
	if evs.created.IsZero() || evs.gone.IsZero() || evs.both.IsZero() {
		t.Errorf("watch events: stand-in created %v, two Ready %v, old pod retired %v", evs.created, evs.both, evs.gone)
	} else {
		t.Logf("relocation wall time %s (stand-in created → old pod retired, by watch events); two pods Ready %s after the stand-in was created",
			evs.gone.Sub(evs.created).Round(time.Millisecond), evs.both.Sub(evs.created).Round(time.Millisecond))
	}
	if minReady != 1 || evMin != 1 {
		t.Errorf("minimum Ready pods during the relocation = %d sampled, %d by watch events; want 1", minReady, evMin)
	}
	if evMax < 2 {
		t.Errorf("maximum Ready pods by watch events = %d: the stand-in was never Ready beside the old pod", evMax)
	}
	if now.Spec.NodeName != second {
		t.Errorf("new pod on %s, want the node with room %s", now.Spec.NodeName, second)
	}
	// Sized by admission from the profile: at least the growth the first node could not give.
	if got, want := now.Spec.Containers[0].Resources.Requests.Cpu(), deferred.Spec.Containers[0].Resources.Requests.Cpu(); got.Cmp(*want) < 0 || fullFirst && got.Cmp(*want) == 0 {
		t.Errorf("new pod cpu request %s, want at least the Deferred growth %s", got, want)
	}
	t.Logf("new pod cpu request %s (admission), old pod's Deferred ask %s, before %s", cpuRequest(now), cpuRequest(deferred), cpuRequest(old))
	if r, err := replicasOf(c, ns, app); err != nil || r != 1 {
		t.Errorf("replicas %d (%v), want 1", r, err)
	}
	if optIn {
		d := &appsv1.Deployment{}
		if err := sb.Client.Get(c, client.ObjectKey{Namespace: ns, Name: app}, d); err != nil {
			t.Fatal(err)
		}
		if v, ok := d.Annotations[understudy.RelocationStateAnnotation]; ok {
			t.Errorf("relocation state left on the Deployment: %s", v)
		}
	} else {
		u := wantPhase(t, c, ns, "guard", ballastv1.UnderstudyIdle)
		if u.Status.LastSurgeTime == nil || u.Status.LastReleaseTime == nil {
			t.Errorf("status %+v: want lastSurgeTime and lastReleaseTime", u.Status)
		}
	}
	waitFor(t, c, `ballast_resize_outcome_total{outcome="relocated"} counted`, func() error {
		n, err := counter(c, "ballast_resize_outcome_total", map[string]string{"outcome": "relocated", "namespace": ns})
		if err != nil || n != 1 {
			return fmt.Errorf("%v (%v), want 1", n, err)
		}
		return nil
	})
	waitFor(t, c, "Relocated and ladder events on the old pod", func() error {
		var evs corev1.EventList
		if err := sb.Client.List(c, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == old.Name && e.Reason == "ResizeLadder" && strings.HasPrefix(e.Message, "relocate: ") {
				seen["ladder"] = true
			}
			if e.InvolvedObject.Name == old.Name && e.Reason == "Relocated" {
				seen["relocated"] = true
			}
			if e.InvolvedObject.Kind == "Understudy" && e.Reason == "SurgeStarted" && strings.Contains(e.Message, "relocating pod "+old.Name) {
				seen["surge"] = true
			}
			if optIn && e.InvolvedObject.Name == old.Name && e.Reason == "SurgeStarted" && strings.Contains(e.Message, "opted in to relocation") {
				seen["surge"] = true
			}
		}
		if !seen["ladder"] || !seen["relocated"] || !seen["surge"] {
			return fmt.Errorf("seen %v", seen)
		}
		return nil
	})
}

// resizeSingleton is a one-replica resize-mode Deployment whose resizes the simulated
// kubelet defers.
func resizeSingleton(ns, name string) *appsv1.Deployment {
	sel := map[string]string{"app": name, "app.kubernetes.io/name": name, "app.kubernetes.io/component": "api"}
	tmpl := map[string]string{ballastv1.ModeLabel: "resize", sandbox.DeferResizeLabel: "true"}
	for k, v := range sel {
		tmpl[k] = v
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "sandbox.invalid/" + name + ":1", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}}},
				Tolerations:                   []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
				TerminationGracePeriodSeconds: ptr.To(int64(0)),
			}}}}
}

// filler is an unenrolled pod bound to node requesting cpu.
func filler(ns, node, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "filler"},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To(int64(0)),
			Containers: []corev1.Container{{Name: "fill", Image: "sandbox.invalid/filler:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}}}}
}

// feedProfile writes a minute and a half of flat usage for the pod's profile into the
// store, as the node agents would (the understudy sandbox runs none), so the profile turns
// ready with the demo readiness preset.
func feedProfile(t *testing.T, c context.Context, p *corev1.Pod, milliCPU, memBytes float64) {
	t.Helper()
	var hash string
	waitFor(t, c, "profile of "+p.Name+" has a measurement hash", func() error {
		cur := &corev1.Pod{}
		if err := sb.Client.Get(c, client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		wp := &ballastv1.WorkloadProfile{}
		if err := sb.Client.Get(c, client.ObjectKey{Name: cur.Annotations[ballastv1.ProfileRefAnnotation]}, wp); err != nil {
			return err
		}
		if hash = wp.Status.MeasurementHash; hash == "" {
			return fmt.Errorf("no hash yet")
		}
		return nil
	})
	st, err := store.Open(sb.Valkey.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	layout := series.DefaultLayout(24 * time.Hour) // the sandbox's retentionWindow
	wr, err := store.NewWriter(st, layout)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	var ups []series.WindowUpdate
	for res, v := range map[string]float64{series.ResourceCPU: milliCPU, series.ResourceMemory: memBytes} {
		windows := map[time.Time]*series.Histogram{}
		for i := 0; i < 91; i++ {
			at := end.Add(-time.Duration(90-i) * time.Second)
			start := series.WindowStart(at, layout.Window)
			if windows[start] == nil {
				windows[start] = &series.Histogram{}
			}
			if err := windows[start].Add(v, at); err != nil {
				t.Fatal(err)
			}
		}
		for start, h := range windows {
			ups = append(ups, series.WindowUpdate{Series: series.SeriesID{Profile: hash, Container: "app", Resource: res,
				Signal: series.SignalUsage}, Start: start, Hist: h})
		}
	}
	if err := wr.Flush(c, ups); err != nil {
		t.Fatal(err)
	}
}

func waitPodState(t *testing.T, c context.Context, ns, name, state string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	waitFor(t, c, "pod "+name+" resize-state "+state, func() error {
		if err := sb.Client.Get(c, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		if got := p.Annotations[ballastv1.ResizeStateAnnotation]; got != state {
			return fmt.Errorf("resize-state %q, cpu %s", got, cpuRequest(p))
		}
		return nil
	})
	return p
}

func cpuRequest(p *corev1.Pod) string { return p.Spec.Containers[0].Resources.Requests.Cpu().String() }
