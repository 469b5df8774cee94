package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/test/harness"
)

// testTrafficRollout: the rolling-deploy baseline of issue 29, with Ballast out of the
// picture. A one-replica Deployment of the load app serving HTTP (readinessProbe on
// /readyz, RollingUpdate maxSurge 1 maxUnavailable 0), not enrolled (no mode label), behind
// a ClusterIP Service; the harness Probe sends 3 requests/s through the service proxy
// stand-in (one new connection each) for 5 s, then the template gets a restartedAt
// annotation (what `kubectl rollout restart` writes) and the probe runs on until the old
// pod is gone plus 3 s. Then the same again with the probe in burst mode (10 concurrent
// requests every 1/3 s), so requests are in flight when the old pod drains. Recorded, not
// asserted, for each: requests sent and failed with each
// failure's time, the time the stand-in saw no Ready endpoint (and no endpoint at all), the rollout duration and
// the time until the old pod was gone. Asserted: the probe got at least 20 answers, the
// rollout completed, and the Service then answers from the new pod.
func testTrafficRollout(t *testing.T, ctx context.Context) {
	const ns, name = "traffic", "web"
	createNamespace(t, ctx, ns)
	tmpl := loadPod(ns, "", "traffic", "", []string{"-cpu-millis", "10", "-memory-mib", "8", "-http-addr", ":8080"},
		res("20m", "32Mi"), res("", "64Mi"))
	delete(tmpl.Labels, modeLabel) // not enrolled: the baseline without Ballast
	tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	c := &tmpl.Spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}}
	selector := map[string]string{"app.kubernetes.io/name": "loadapp", "app.kubernetes.io/component": "traffic"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: selector},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	for _, o := range []client.Object{svc, dep} {
		if err := n.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		_ = n.Client.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationBackground))
		_ = n.Client.Delete(ctx, svc)
	}()
	url := "http://" + svc.Spec.ClusterIP + ":80/"
	var oldPod string
	harness.Eventually(t, 60*time.Second, "the Service answering from the Deployment's pod", func() error {
		body, err := getBody(url)
		if err != nil {
			return err
		}
		oldPod = strings.TrimPrefix(strings.TrimSpace(body), "loadapp ")
		return nil
	})

	for _, probe := range []*harness.Probe{{URL: url, Rate: 3}, {URL: url, Rate: 3, Burst: 10}} {
		oldPod = rolloutUnderProbe(t, ctx, dep, url, oldPod, probe)
	}
}

// rolloutUnderProbe runs probe for 5 s, restarts dep's rollout, keeps probing until the
// rollout is complete and oldPod is gone plus 3 s, logs the figures, checks the probe got
// answers and the Service now answers from a new pod, and returns that pod's name.
func rolloutUnderProbe(t *testing.T, ctx context.Context, dep *appsv1.Deployment, url, oldPod string, probe *harness.Probe) string {
	ns, name := dep.Namespace, dep.Name
	mode := fmt.Sprintf("%g req/s", probe.Rate)
	if probe.Burst > 1 {
		mode = fmt.Sprintf("burst %d × %g/s", probe.Burst, probe.Rate)
	}
	// What the stand-in sees, every 20 ms: the endpoints it picks a new connection's from.
	watchStop, watchDone := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var unready, empty time.Duration
	var transitions []string
	var patched time.Time
	go func() {
		defer close(watchDone)
		addrs, lastReady := n.Endpoints(ns, name, "http")
		last, lastEmpty, lastAt := EndpointsString(addrs, lastReady), len(addrs) == 0, time.Now()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-watchStop:
				return
			case <-tick.C:
			}
			now := time.Now()
			addrs, ready := n.Endpoints(ns, name, "http")
			ep := EndpointsString(addrs, ready)
			mu.Lock()
			if !lastReady {
				unready += now.Sub(lastAt)
			}
			if lastEmpty {
				empty += now.Sub(lastAt)
			}
			if ep != last {
				transitions = append(transitions, fmt.Sprintf("%s: %s → %s (slices: %s)", since(patched, now), last, ep, n.EndpointsDetail(ns, name)))
			}
			mu.Unlock()
			last, lastReady, lastEmpty, lastAt = ep, ready, len(addrs) == 0, now
		}
	}()

	probe.Start()
	time.Sleep(5 * time.Second)
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`,
		time.Now().UTC().Format(time.RFC3339))
	mu.Lock()
	patched = time.Now()
	mu.Unlock()
	if err := n.Client.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		probe.Stop()
		t.Fatal(err)
	}
	var rolled, drained time.Duration
	err := harness.Poll(ctx, 45*time.Second, "rollout complete and the old pod gone", func() error {
		if rolled == 0 {
			d := &appsv1.Deployment{}
			if err := n.Client.Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
				return err
			}
			st := d.Status
			if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != 1 || st.Replicas != 1 || st.AvailableReplicas != 1 {
				return fmt.Errorf("generation %d observed %d, updated %d replicas %d available %d",
					d.Generation, st.ObservedGeneration, st.UpdatedReplicas, st.Replicas, st.AvailableReplicas)
			}
			rolled = time.Since(patched)
		}
		p := &corev1.Pod{}
		err := n.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: oldPod}, p)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			return fmt.Errorf("old pod %s still there (deletion %v)", oldPod, p.DeletionTimestamp)
		}
		drained = time.Since(patched)
		return nil
	})
	if err == nil {
		time.Sleep(3 * time.Second)
	}
	r := probe.Stop()
	close(watchStop)
	<-watchDone
	if err != nil {
		t.Fatalf("%v (probe: %s)", err, r)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range r.Failures {
		t.Logf("failure at %s: %s", since(patched, f.At), f.Err)
	}
	t.Logf("%s: stand-in endpoint changes (time from the patch): %s", mode, strings.Join(transitions, "; "))
	t.Logf("traffic-rollout figures, %s: requests %d, failed %d, longest failure streak %d over %s; 0 Ready endpoints for %s (no endpoint at all for %s); rollout %s; old pod gone after %s",
		mode, r.Sent, r.Failed, r.LongestStreak, r.StreakSpan.Round(time.Millisecond), unready.Round(10*time.Millisecond), empty.Round(10*time.Millisecond),
		rolled.Round(100*time.Millisecond), drained.Round(100*time.Millisecond))
	if r.Sent-r.Failed < 20 {
		t.Errorf("%s: the probe got %d answers of %d requests; it saw no real traffic", mode, r.Sent-r.Failed, r.Sent)
	}
	body, err := getBody(url)
	if err != nil {
		t.Fatalf("the Service after the rollout: %v", err)
	}
	newPod := strings.TrimPrefix(strings.TrimSpace(body), "loadapp ")
	if newPod == oldPod || newPod == "" {
		t.Errorf("%s: after the rollout the Service answers from %q, the old pod was %q", mode, newPod, oldPod)
	}
	return newPod
}

// since formats at relative to from (or as "before" when from is not yet set).
func since(from, at time.Time) string {
	if from.IsZero() {
		return "before the patch"
	}
	return fmt.Sprintf("%+.2fs", at.Sub(from).Seconds())
}

func getBody(url string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), nil
}
