package twonode

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

const (
	relocNS  = "reloc"
	moverCPU = 300 // millicores the mover burns: the profile asks 375m (avg × 1.25)
)

var moverLabels = map[string]string{"app.kubernetes.io/name": "loadapp", "app.kubernetes.io/component": "mover"}

// testRelocation: the relocation rung (SPEC §15.5) on real kubelets. A resize-mode
// singleton (the load app burning 300m, admitted at a 50m cpu request) behind a Service,
// protected by an Understudy, starts on node-a (node-b cordoned meanwhile); node-a is then
// filled (an unenrolled pod bound to it takes all but 20m of its free cpu), so when the
// profile turns Sufficient the growth to ~375m cannot fit there. The resize ladder hands it
// to relocation: the Understudy surges a stand-in, admitted by the webhook at the profile's
// size, which only node-b can take; once it is Ready the old pod is retired. The probe
// sends 3 req/s through the Service throughout.
//
// Recorded: failed requests, time with 0 Ready endpoints, and the relocation's time from
// the surge (the Understudy turning Surging: the ladder hands the growth over at plan time,
// a real kubelet never sees a Deferred resize here because Ballast's planner does not send
// a growth the node cannot hold) to the new pod Ready on node-b at its new size. Asserted:
// the new pod runs on node-b with a larger cpu request than the old one, no time with 0
// Ready endpoints, and no more failed requests than the rolling deploy plus one (as for
// the Understudy drain).
func testRelocation(t *testing.T, ctx context.Context) {
	a, b := n.Nodes[0], n.Nodes[1]
	createNamespace(t, ctx, relocNS)
	if _, err := kubectl(ctx, "cordon", b); err != nil {
		t.Fatal(err)
	}
	tmpl := loadPod(relocNS, "", "mover", []string{"-cpu-millis", fmt.Sprint(moverCPU), "-memory-mib", "16", "-http-addr", ":8080"})
	tmpl.Labels[ballastv1.ModeLabel] = "resize"
	tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	c := &tmpl.Spec.Containers[0]
	c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("50m")
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}}
	mover := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "mover", Namespace: relocNS},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: moverLabels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "mover", Namespace: relocNS},
		Spec: corev1.ServiceSpec{Selector: moverLabels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	for _, o := range []client.Object{svc, mover} {
		if err := n.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	old := podOf(t, ctx, relocNS, moverLabels)
	if old.Spec.NodeName != a {
		t.Fatalf("mover on %s, want %s", old.Spec.NodeName, a)
	}
	oldCPU := old.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()

	// node-a fills up before the profile can be Sufficient (20 s of samples).
	fill := fillerFor(t, ctx, a, 20)
	if _, err := kubectl(ctx, "uncordon", b); err != nil {
		t.Fatal(err)
	}
	u := &ballastv1.Understudy{ObjectMeta: metav1.ObjectMeta{Namespace: relocNS, Name: "mover-guard"},
		Spec: ballastv1.UnderstudySpec{TargetRef: ballastv1.UnderstudyTargetRef{Kind: "Deployment", Name: "mover"}}}
	if err := n.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}

	moverURL := "http://" + svc.Spec.ClusterIP + ":80/"
	harness.Eventually(t, 30*time.Second, "the mover's Service answering", func() error {
		_, err := getBody(moverURL)
		return err
	})
	watchStop, watchDone := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var unready time.Duration
	var surged time.Time
	go func() {
		defer close(watchDone)
		_, lastReady := n.Endpoints(relocNS, "mover", "http")
		lastAt := time.Now()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-watchStop:
				return
			case <-tick.C:
			}
			now := time.Now()
			_, ready := n.Endpoints(relocNS, "mover", "http")
			mu.Lock()
			if !lastReady {
				unready += now.Sub(lastAt)
			}
			if i%5 == 0 && surged.IsZero() { // every 100 ms: the surge
				cur := &ballastv1.Understudy{}
				if err := n.Client.Get(ctx, client.ObjectKeyFromObject(u), cur); err == nil && cur.Status.Phase == ballastv1.UnderstudySurging {
					surged = now
				}
			}
			mu.Unlock()
			lastReady, lastAt = ready, now
		}
	}()
	probe := &harness.Probe{URL: moverURL, Rate: 3}
	probe.Start()
	began := time.Now()
	var now *corev1.Pod
	var ready, goneAt time.Time
	err := harness.Poll(ctx, 3*time.Minute, "the mover relocated to "+b, func() error {
		var l corev1.PodList
		if err := n.Client.List(ctx, &l, client.InNamespace(relocNS), client.MatchingLabels(moverLabels)); err != nil {
			return err
		}
		var names []string
		oldThere := false
		for i := range l.Items {
			oldThere = oldThere || l.Items[i].Name == old.Name
			p := &l.Items[i]
			names = append(names, fmt.Sprintf("%s@%s ready=%v cpu=%s", p.Name, p.Spec.NodeName, podReady(p), p.Spec.Containers[0].Resources.Requests.Cpu()))
			if p.Name != old.Name && p.Spec.NodeName == b && podReady(p) && ready.IsZero() {
				ready = time.Now()
			}
		}
		if !oldThere && goneAt.IsZero() {
			goneAt = time.Now()
		}
		if len(l.Items) != 1 || l.Items[0].Name == old.Name || !podReady(&l.Items[0]) {
			cur := &corev1.Pod{}
			if err := n.Client.Get(ctx, client.ObjectKeyFromObject(old), cur); err == nil {
				names = append(names, "old resize-state="+cur.Annotations[ballastv1.ResizeStateAnnotation])
			}
			return fmt.Errorf("pods %v", names)
		}
		now = &l.Items[0]
		return nil
	})
	if err == nil {
		time.Sleep(3 * time.Second)
	}
	rep := probe.Stop()
	close(watchStop)
	<-watchDone
	defer func() { _ = n.Client.Delete(ctx, fill) }()
	if err != nil {
		evs, _ := kubectl(ctx, "get", "events", "-n", relocNS, "--sort-by=.lastTimestamp")
		uy, _ := kubectl(ctx, "get", "understudy", "-n", relocNS, "-o", "yaml")
		t.Fatalf("%v (probe: %s)\nevents:\n%s\nunderstudy:\n%s", err, rep, evs, uy)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range rep.Failures {
		t.Logf("failure at %s: %s", rel(began, f.At), f.Err)
	}
	r := row{name: "relocation (growth cannot fit on node-a, room on node-b)", sent: rep.Sent, failed: rep.Failed,
		unready: unready, from: old.Spec.NodeName, to: now.Spec.NodeName}
	if !surged.IsZero() {
		r.took, r.gone = ready.Sub(surged), goneAt.Sub(surged)
	}
	newCPU := now.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	t.Logf("figures, relocation: requests %d, failed %d; 0 Ready endpoints for %s; surge %s after the probe started, stand-in Ready on %s %s and the old pod gone %s after the surge; cpu request %dm → %dm",
		rep.Sent, rep.Failed, unready.Round(10*time.Millisecond), rel(began, surged), b, r.took.Round(100*time.Millisecond), r.gone.Round(100*time.Millisecond), oldCPU, newCPU)
	rows = append(rows, r)
	if surged.IsZero() {
		t.Errorf("never saw the Understudy Surging")
	}
	if now.Spec.NodeName != b {
		t.Errorf("mover now on %s, want %s", now.Spec.NodeName, b)
	}
	if newCPU <= oldCPU {
		t.Errorf("new pod's cpu request %dm, want above the old %dm (sized at admission from the profile)", newCPU, oldCPU)
	}
	if unready != 0 {
		t.Errorf("relocation: %s with no Ready endpoint, want 0", unready)
	}
	if len(rows) > 0 && r.failed > rows[0].failed+1 {
		t.Errorf("relocation lost %d requests, the rolling deploy %d (tolerance 1)", r.failed, rows[0].failed)
	}
	evs, _ := kubectl(ctx, "get", "events", "-n", relocNS, "--field-selector=involvedObject.name="+old.Name, "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
	t.Logf("events on the old pod:\n%s", evs)
	if !strings.Contains(evs, "Relocated") {
		t.Errorf("no Relocated event on the old pod")
	}
}

// podOf waits until the selector has exactly one pod, Ready, and returns it.
func podOf(t *testing.T, ctx context.Context, ns string, sel map[string]string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	harness.Eventually(t, 2*time.Minute, "one Ready pod", func() error {
		var l corev1.PodList
		if err := n.Client.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels(sel)); err != nil {
			return err
		}
		if len(l.Items) != 1 || !podReady(&l.Items[0]) {
			return fmt.Errorf("%d pods", len(l.Items))
		}
		pod = &l.Items[0]
		return nil
	})
	return pod
}

// fillerFor binds an unenrolled pod (pause image) to nodeName requesting all of the node's
// free cpu but leaveMilli, waits until it runs, and returns it.
func fillerFor(t *testing.T, ctx context.Context, nodeName string, leaveMilli int64) *corev1.Pod {
	t.Helper()
	nd := &corev1.Node{}
	if err := n.Client.Get(ctx, client.ObjectKey{Name: nodeName}, nd); err != nil {
		t.Fatal(err)
	}
	var l corev1.PodList
	if err := n.Client.List(ctx, &l); err != nil {
		t.Fatal(err)
	}
	used := int64(0)
	for _, p := range l.Items {
		if p.Spec.NodeName != nodeName || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			used += c.Resources.Requests.Cpu().MilliValue()
		}
	}
	free := nd.Status.Allocatable.Cpu().MilliValue() - used
	want := free - leaveMilli
	if want <= 0 {
		t.Fatalf("%s has %dm free", nodeName, free)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: relocNS, Name: "filler"},
		Spec: corev1.PodSpec{NodeName: nodeName, TerminationGracePeriodSeconds: ptr.To[int64](0),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "fill", Image: n.Images["pause"], ImagePullPolicy: corev1.PullNever,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(want, resource.DecimalSI)}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}}}
	p = runningPod(t, ctx, p)
	t.Logf("filler on %s requests %dm of %dm free (allocatable %s)", nodeName, want, free, nd.Status.Allocatable.Cpu())
	return p
}

// testUninstall: helm uninstall --wait, so teardown finds no controller recreating pods.
func testUninstall(t *testing.T, ctx context.Context) {
	for _, ns := range []string{appNS, relocNS} {
		_ = n.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	start := time.Now()
	helm(t, "uninstall", release, "-n", namespace, "--wait", "--timeout", "2m")
	t.Logf("helm uninstall --wait: %s", time.Since(start).Round(100*time.Millisecond))
}
