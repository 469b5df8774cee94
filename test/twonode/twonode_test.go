package twonode

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/node"
)

const (
	release   = "ballast"
	namespace = "ballast-system"
	appNS     = "traffic"
	appName   = "web"
)

// appLabels select the singleton's pods (drain --pod-selector, the Service).
var appLabels = map[string]string{"app.kubernetes.io/name": "loadapp", "app.kubernetes.io/component": "traffic"}

// row is one line of the issue-29 table.
type row struct {
	name          string
	sent, failed  int
	unready, took time.Duration // took: the drain's wall time, the rollout's until complete, the relocation's (see testRelocation)
	gone          time.Duration // from the action's start until the old pod was gone
	from, to      string        // the old and the new pod's node
}

var rows []row

// TestTwoNode brings Ballast up on the two-node tier and measures, in one run, what a
// one-replica Deployment behind a Service loses under a 3 req/s probe: a rolling deploy
// (the baseline), `kubectl drain` of its node with an Understudy protecting it, and the same
// drain without. Each step needs the state the previous one left.
func TestTwoNode(t *testing.T) {
	node.Require(t)
	ctx := context.Background()
	began := time.Now()
	steps := []struct {
		name string
		f    func(*testing.T, context.Context)
	}{
		{"network", testNetwork},
		{"install", testInstall},
		{"node-b-measured", testNodeBMeasured},
		{"singleton", testSingleton},
		{"rollout", testRollout},
		{"drain-understudy", testDrainUnderstudy},
		{"drain-plain", testDrainPlain},
		{"relocation", testRelocation},
		{"table", testTable},
		{"uninstall", testUninstall},
	}
	defer func() {
		if t.Failed() && installed {
			for _, ns := range []string{appNS, relocNS, measureNS} {
				_ = n.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			}
			_, _ = helmErr("uninstall", release, "-n", namespace, "--wait", "--timeout", "1m")
		}
	}()
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.f(t, ctx) }) {
			t.Fatalf("step %s failed; later steps need its state", s.name)
		}
	}
	t.Logf("timing: nodes ready %s, scenario %s", n.Timings.Started.Round(time.Second), time.Since(began).Round(time.Second))
}

// testNetwork: both nodes are Ready, and a pod on each answers HTTP from the test process
// (the router) and from the other node's pod through a Service (pod → its node → router's
// service stand-in → the other node → pod).
func testNetwork(t *testing.T, ctx context.Context) {
	if len(n.Nodes) != 2 {
		t.Fatalf("nodes %v, want 2", n.Nodes)
	}
	createNamespace(t, ctx, "net")
	var ips []string
	for _, nd := range n.Nodes {
		p := loadPod("net", "echo-"+nd, "echo-"+nd, []string{"-cpu-millis", "5", "-memory-mib", "4", "-http-addr", ":8080"})
		p.Spec.NodeName = nd
		p = runningPod(t, ctx, p)
		ips = append(ips, p.Status.PodIP)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo-" + nd, Namespace: "net"},
			Spec: corev1.ServiceSpec{Selector: p.Labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if err := n.Client.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	for i, ip := range ips {
		harness.Eventually(t, 30*time.Second, "pod on "+n.Nodes[i]+" answering the router", func() error {
			_, err := getBody("http://" + ip + ":8080/")
			return err
		})
	}
	// From the pod on node-a, through the Service (DNS stand-in and service stand-in on the
	// router), to the pod on node-b: the loadapp image has no shell, so the kubelet's exec
	// is not used; the apiserver's pods/proxy path (router → node-b pod) and a Service hop
	// are what the scenarios need, and both are checked here.
	for _, nd := range n.Nodes {
		svc := &corev1.Service{}
		if err := n.Client.Get(ctx, client.ObjectKey{Namespace: "net", Name: "echo-" + nd}, svc); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 30*time.Second, "Service echo-"+nd+" answering", func() error {
			body, err := getBody("http://" + svc.Spec.ClusterIP + ":80/")
			if err == nil && !strings.Contains(body, "echo-"+nd) {
				err = fmt.Errorf("answer %q from the wrong pod", body)
			}
			return err
		})
		b, err := n.Clientset.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/net/pods/echo-" + nd + ":8080/proxy/").DoRaw(ctx)
		if err != nil || !strings.Contains(string(b), "echo-"+nd) {
			t.Errorf("pods/proxy to the pod on %s: %v %q", nd, err, b)
		}
		// The kubelet on each node serves the API server (logs through the node's kubelet).
		if _, err := n.Clientset.CoreV1().Pods("net").GetLogs("echo-"+nd, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil {
			t.Errorf("logs through the kubelet of %s: %v", nd, err)
		}
	}
	if err := n.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "net"}}); err != nil {
		t.Fatal(err)
	}
}

// testInstall: helm install --wait; the agent DaemonSet runs on both nodes.
func testInstall(t *testing.T, ctx context.Context) {
	start := time.Now()
	helm(t, append([]string{"install", release, filepath.Join(harness.RepoRoot(), "charts", "ballast"), "-n", namespace,
		"--create-namespace", "--wait", "--timeout", "5m"}, userValues(t)...)...)
	installed = true
	t.Logf("helm install --wait: %s", time.Since(start).Round(100*time.Millisecond))
	ds := &appsv1.DaemonSet{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ballast-node"}, ds); err != nil {
		t.Fatal(err)
	}
	if ds.Status.NumberReady != 2 || ds.Status.DesiredNumberScheduled != 2 {
		t.Errorf("DaemonSet ready %d of %d, want 2 of 2", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	}
}

var (
	dep       *appsv1.Deployment
	installed bool // the release is in: a failed run uninstalls it so teardown meets no controller
)

// testSingleton: the one-replica Deployment of the load app serving HTTP (readinessProbe on
// /readyz every second, maxSurge 1, maxUnavailable 0, not enrolled) behind a Service.
func testSingleton(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, appNS)
	tmpl := loadPod(appNS, "", "traffic", []string{"-cpu-millis", "10", "-memory-mib", "8", "-http-addr", ":8080"})
	tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	c := &tmpl.Spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}}
	dep = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: appNS},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: appLabels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: appNS},
		Spec: corev1.ServiceSpec{Selector: appLabels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	for _, o := range []client.Object{svc, dep} {
		if err := n.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	url = "http://" + svc.Spec.ClusterIP + ":80/"
	harness.Eventually(t, 90*time.Second, "the Service answering from the Deployment's pod", func() error {
		_, err := getBody(url)
		return err
	})
}

var url string

// testRollout: the baseline, a rolling deploy (the restartedAt annotation `kubectl rollout
// restart` writes).
func testRollout(t *testing.T, ctx context.Context) {
	r := disrupt(t, ctx, "rolling deploy (maxSurge 1, maxUnavailable 0)", func(string) (string, error) {
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`,
			time.Now().UTC().Format(time.RFC3339))
		return "", n.Client.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
	rows = append(rows, r)
}

// testDrainUnderstudy: an Understudy protects the Deployment (SPEC §15); kubectl drain of
// the singleton's node is held with 429 until the stand-in on the other node is Ready.
// Asserted: no time with 0 Ready endpoints, no more failed requests than the rolling deploy
// plus one (a request the service stand-in sent to the old pod in the instant between its
// SIGTERM and the EndpointSlice update: the same race a rolling deploy has, one request
// wide at 3 req/s), and the drain saw the hold.
func testDrainUnderstudy(t *testing.T, ctx context.Context) {
	u := &ballastv1.Understudy{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "guard"},
		Spec: ballastv1.UnderstudySpec{TargetRef: ballastv1.UnderstudyTargetRef{Kind: "Deployment", Name: appName}}}
	if err := n.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, "Understudy guard Idle and Ready", func() error {
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		if u.Status.Phase != ballastv1.UnderstudyIdle || u.Status.ObservedGeneration != u.Generation {
			return fmt.Errorf("phase %q, conditions %+v", u.Status.Phase, u.Status.Conditions)
		}
		for _, c := range u.Status.Conditions {
			if c.Type == "Ready" && c.Status != metav1.ConditionTrue {
				return fmt.Errorf("Ready %s: %s", c.Reason, c.Message)
			}
		}
		return nil
	})
	logWebhookReplica(t, ctx)
	var out string
	r := disrupt(t, ctx, "kubectl drain, Understudy on", func(nodeName string) (string, error) {
		var err error
		out, err = drain(ctx, nodeName)
		return nodeName, err
	})
	rows = append(rows, r)
	if !strings.Contains(out, "held by Understudy "+appNS+"/guard") {
		t.Errorf("the drain did not see the Understudy's hold:\n%s", out)
		diagnose(t, ctx)
	}
	if r.unready != 0 {
		t.Errorf("%s: %s with no Ready endpoint, want 0", r.name, r.unready)
	}
	base := rows[0]
	if r.failed > base.failed+1 {
		t.Errorf("%s lost %d requests, the rolling deploy %d (tolerance 1)", r.name, r.failed, base.failed)
	}
	harness.Eventually(t, 60*time.Second, "Understudy guard back to Idle", func() error {
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		if u.Status.Phase != ballastv1.UnderstudyIdle {
			return fmt.Errorf("phase %q", u.Status.Phase)
		}
		return nil
	})
	if err := n.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "Understudy guard gone", func() error {
		err := n.Client.Get(ctx, client.ObjectKeyFromObject(u), u)
		if err == nil {
			return fmt.Errorf("still there")
		}
		return client.IgnoreNotFound(err)
	})
}

// testDrainPlain: the same drain with no Understudy (the Deployment not protected).
func testDrainPlain(t *testing.T, ctx context.Context) {
	// The Understudy's webhook replicas drop the deleted Understudy from their index on
	// the informer's delete event; give them a moment.
	time.Sleep(2 * time.Second)
	var out string
	r := disrupt(t, ctx, "kubectl drain, Understudy off", func(nodeName string) (string, error) {
		var err error
		out, err = drain(ctx, nodeName)
		return nodeName, err
	})
	rows = append(rows, r)
	if strings.Contains(out, "held by Understudy") {
		t.Errorf("an unprotected drain was held:\n%s", out)
	}
}

func testTable(t *testing.T, _ context.Context) {
	var b strings.Builder
	b.WriteString("| scenario | failed / sent | time with 0 Ready endpoints | drain wall / rollout complete / surge → stand-in Ready | old pod gone after | node |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d / %d | %s | %s | %s | %s → %s |\n", r.name, r.failed, r.sent,
			r.unready.Round(10*time.Millisecond), r.took.Round(100*time.Millisecond), r.gone.Round(100*time.Millisecond), r.from, r.to)
	}
	t.Logf("issue-29 table:\n%s", b.String())
	if len(rows) == 3 && rows[1].failed >= rows[2].failed {
		t.Logf("note: Understudy on lost %d, off %d: not strictly fewer in this run", rows[1].failed, rows[2].failed)
	}
}

// disrupt runs the probe for 5 s, then action (given the singleton's node; it returns
// when the disruption's command returned), keeps probing until the Deployment is back to
// one available up-to-date pod and the old pod is gone plus 3 s, and returns the figures.
// The probe sends one new connection 3 times a second through the service stand-in, which
// picks each one's endpoint at random among the Ready ones, as kube-proxy does; the set it
// picks from is sampled every 20 ms, and the time it had no Ready endpoint is summed.
func disrupt(t *testing.T, ctx context.Context, name string, action func(nodeName string) (string, error)) row {
	t.Helper()
	old := onePod(t, ctx)
	r := row{name: name, from: old.Spec.NodeName}
	watchStop, watchDone := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var unready time.Duration
	var transitions []string
	var began time.Time
	go func() {
		defer close(watchDone)
		addrs, lastReady := n.Endpoints(appNS, appName, "http")
		last, lastAt := node.EndpointsString(addrs, lastReady), time.Now()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-watchStop:
				return
			case <-tick.C:
			}
			now := time.Now()
			addrs, ready := n.Endpoints(appNS, appName, "http")
			ep := node.EndpointsString(addrs, ready)
			mu.Lock()
			if !lastReady {
				unready += now.Sub(lastAt)
			}
			if ep != last {
				transitions = append(transitions, fmt.Sprintf("%s: %s → %s (slices: %s)", rel(began, now), last, ep, n.EndpointsDetail(appNS, appName)))
			}
			mu.Unlock()
			last, lastReady, lastAt = ep, ready, now
		}
	}()
	probe := &harness.Probe{URL: url, Rate: 3}
	probe.Start()
	time.Sleep(5 * time.Second)
	mu.Lock()
	began = time.Now()
	mu.Unlock()
	_, err := action(old.Spec.NodeName)
	r.took = time.Since(began)
	rollout := r.took < 500*time.Millisecond // a patch returns at once: time the rollout itself
	if err != nil {
		probe.Stop()
		close(watchStop)
		t.Fatalf("%s: %v", name, err)
	}
	err = harness.Poll(ctx, 2*time.Minute, "one available up-to-date pod and the old pod gone", func() error {
		d := &appsv1.Deployment{}
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
			return err
		}
		st := d.Status
		if *d.Spec.Replicas != 1 || st.ObservedGeneration < d.Generation || st.UpdatedReplicas != 1 || st.Replicas != 1 || st.AvailableReplicas != 1 {
			return fmt.Errorf("spec.replicas %d, generation %d observed %d, updated %d replicas %d available %d",
				*d.Spec.Replicas, d.Generation, st.ObservedGeneration, st.UpdatedReplicas, st.Replicas, st.AvailableReplicas)
		}
		if rollout {
			r.took, rollout = time.Since(began), false
		}
		p := &corev1.Pod{}
		err := n.Client.Get(ctx, client.ObjectKeyFromObject(old), p)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			return fmt.Errorf("old pod %s still there (deletion %v)", old.Name, p.DeletionTimestamp)
		}
		if r.gone == 0 {
			r.gone = time.Since(began)
		}
		return nil
	})
	if err == nil {
		time.Sleep(3 * time.Second)
	}
	rep := probe.Stop()
	close(watchStop)
	<-watchDone
	if err != nil {
		t.Fatalf("%s: %v (probe: %s)", name, err, rep)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range rep.Failures {
		t.Logf("failure at %s: %s", rel(began, f.At), f.Err)
	}
	t.Logf("%s: stand-in endpoint changes: %s", name, strings.Join(transitions, "; "))
	r.sent, r.failed, r.unready = rep.Sent, rep.Failed, unready
	now := onePod(t, ctx)
	r.to = now.Spec.NodeName
	t.Logf("figures, %s: requests %d, failed %d, longest failure streak %d over %s; 0 Ready endpoints for %s; action %s; old pod gone after %s; %s → %s",
		name, r.sent, r.failed, rep.LongestStreak, rep.StreakSpan.Round(time.Millisecond), r.unready.Round(10*time.Millisecond),
		r.took.Round(100*time.Millisecond), r.gone.Round(100*time.Millisecond), r.from, r.to)
	if rep.Sent-rep.Failed < 20 {
		t.Errorf("%s: the probe got %d answers of %d requests; it saw no real traffic", name, rep.Sent-rep.Failed, rep.Sent)
	}
	if now.Name == old.Name {
		t.Errorf("%s: the old pod %s still serves", name, old.Name)
	}
	// Every drain leaves its node cordoned: uncordon for the next scenario.
	if _, err := kubectl(ctx, "uncordon", r.from); err != nil {
		t.Fatal(err)
	}
	return r
}

// logWebhookReplica logs which control replica leads and the endpoints the service stand-in
// picks the API server's webhook calls from (at random among the webhook Service's Ready
// endpoints, as kube-proxy does: every replica gets calls), and checks that every replica, asked directly, holds a dry-run eviction of the protected
// pod.
func logWebhookReplica(t *testing.T, ctx context.Context) {
	t.Helper()
	holder, _ := kubectl(ctx, "get", "lease", "-n", namespace, "910c37cf.tightlinesoftware.com", "-o", "jsonpath={.spec.holderIdentity}")
	ep := node.EndpointsString(n.Endpoints(namespace, release+"-webhook", "https"))
	pods, _ := kubectl(ctx, "get", "pods", "-n", namespace, "-l", "app.kubernetes.io/component=control", "-o",
		"custom-columns=NAME:.metadata.name,IP:.status.podIP,NODE:.spec.nodeName,START:.status.startTime")
	t.Logf("leader %q; webhook calls picked at random among %s; control pods:\n%s", holder, ep, pods)
	// Each replica's own answer to a dry-run eviction of the singleton's pod, asked
	// directly on its pod IP (a dry run records nothing and starts no surge).
	var l corev1.PodList
	if err := n.Client.List(ctx, &l, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/component": "control"}); err != nil {
		t.Fatal(err)
	}
	p := onePod(t, ctx)
	for _, cp := range l.Items {
		ans := askEviction(ctx, cp.Status.PodIP, p)
		t.Logf("replica %s (%s) answers a dry-run eviction of %s: %s", cp.Name, cp.Status.PodIP, p.Name, ans)
		if !strings.Contains(ans, "held by Understudy "+appNS+"/guard") {
			// Leader or not: the API server's call may reach any replica (kube-proxy and
			// the stand-in pick one at random per connection).
			t.Errorf("replica %s does not hold the eviction of the protected pod %s", cp.Name, p.Name)
			logs, _ := kubectl(ctx, "logs", "-n", namespace, cp.Name, "-c", "ballast-control")
			var keep []string
			for _, line := range strings.Split(logs, "\n") {
				ll := strings.ToLower(line)
				if strings.Contains(ll, "understudy") || strings.Contains(ll, "evict") || strings.Contains(ll, "error") || strings.Contains(ll, "cache") {
					keep = append(keep, line)
				}
			}
			if len(keep) > 60 {
				keep = keep[len(keep)-60:]
			}
			t.Logf("replica %s, log lines about Understudy, evictions, caches and errors:\n%s", cp.Name, strings.Join(keep, "\n"))
		}
	}
}

// askEviction posts a dry-run eviction review for p to the eviction webhook at ip:9443 and
// returns its answer.
func askEviction(ctx context.Context, ip string, p *corev1.Pod) string {
	ev := fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q,"namespace":%q}}`, p.Name, p.Namespace)
	review := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"twonode-probe",
"kind":{"group":"policy","version":"v1","kind":"Eviction"},"resource":{"group":"","version":"v1","resource":"pods"},
"subResource":"eviction","requestKind":{"group":"policy","version":"v1","kind":"Eviction"},
"requestResource":{"group":"","version":"v1","resource":"pods"},"requestSubResource":"eviction",
"name":%q,"namespace":%q,"operation":"CREATE","userInfo":{"username":"twonode-test"},"object":%s,"dryRun":true}}`, p.Name, p.Namespace, ev)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a probe of the replica's answer, not of its certificate
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+ip+":9443/validate-v1-pod-eviction", strings.NewReader(review))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + string(b)
}

// diagnose logs what tells why an eviction was not held: the control pods' lines about
// evictions and Understudies, the API server's about the eviction webhook, and the
// Understudy's status.
func diagnose(t *testing.T, ctx context.Context) {
	t.Helper()
	logs, _ := kubectl(ctx, "logs", "-n", namespace, "-l", "app.kubernetes.io/component=control", "--prefix", "--tail=-1", "--max-log-requests=4")
	var keep []string
	for _, l := range strings.Split(logs, "\n") {
		ll := strings.ToLower(l)
		if strings.Contains(ll, "evict") || strings.Contains(ll, "understudy") || strings.Contains(ll, "leader") || strings.Contains(ll, "cert") {
			keep = append(keep, l)
		}
	}
	t.Logf("control pods, lines about evictions, Understudy, leadership and certificates:\n%s", strings.Join(keep, "\n"))
	api, _ := os.ReadFile(filepath.Join(n.Dir, "logs", "kube-apiserver.log"))
	keep = nil
	for _, l := range strings.Split(string(api), "\n") {
		if strings.Contains(l, "veviction") || strings.Contains(l, "eviction") {
			keep = append(keep, l)
		}
	}
	t.Logf("kube-apiserver, lines about the eviction webhook:\n%s", strings.Join(keep, "\n"))
	st, _ := kubectl(ctx, "get", "understudies,pods,endpointslices", "-A", "-o", "wide")
	t.Logf("state:\n%s", st)
}

func rel(from, at time.Time) string {
	if from.IsZero() {
		return "before"
	}
	return fmt.Sprintf("%+.2fs", at.Sub(from).Seconds())
}

// drain runs the real kubectl drain of nodeName for the singleton's pods (the rest of
// the node, Ballast's own control plane and Valkey among them, stays: see docs/real-node.md).
func drain(ctx context.Context, nodeName string) (string, error) {
	sel := []string{}
	for k, v := range appLabels {
		sel = append(sel, k+"="+v)
	}
	return kubectl(ctx, "drain", nodeName, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=150s",
		"--pod-selector="+strings.Join(sel, ","))
}

func kubectl(ctx context.Context, args ...string) (string, error) {
	bin, err := harness.Tool("kubectl")
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", n.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	return string(out), nil
}

// onePod waits until the singleton has exactly one pod, Ready, and returns it.
func onePod(t *testing.T, ctx context.Context) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	harness.Eventually(t, 2*time.Minute, appName+" has one Ready pod", func() error {
		var l corev1.PodList
		if err := n.Client.List(ctx, &l, client.InNamespace(appNS), client.MatchingLabels(appLabels)); err != nil {
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

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// helm runs the real helm binary against the cluster, its homes in the tier's folder.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmErr(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func helmErr(args ...string) (string, error) {
	bin, err := harness.Tool("helm")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	home := filepath.Join(n.Dir, "helm")
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", n.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// userValues: the values a user writes for a local cluster (images imported by hand, no
// registry, no storage provisioner) on top of the local-testing preset.
func userValues(t *testing.T) []string {
	t.Helper()
	local := filepath.Join(n.Dir, "values-local-cluster.yaml")
	if err := os.WriteFile(local, []byte(`image:
  pullPolicy: Never
valkey:
  image:
    repository: ballastk8s/valkey
    tag: "8.0.1"
    pullPolicy: Never
  dataStorage:
    enabled: false
`), 0o644); err != nil {
		t.Fatal(err)
	}
	fast := filepath.Join(n.Dir, "values-fast.yaml")
	if err := os.WriteFile(fast, []byte(`# Test speed: 1 s sampling, profiles Sufficient after 5 samples over 20 s, resize-mode
# pods stepped every 5 s (as the one-node tier).
defaultMetricsSources:
  kubernetesMetrics:
    pollInterval: "1s"
  kubeletSummary:
    pollInterval: "5s"
defaultClusterResourcePolicy:
  metrics:
    - {resource: cpu, field: request, aggregation: avg, headroom: "1.25"}
    - {resource: memory, field: request, aggregation: p75, headroom: "1.0"}
    - {resource: memory, field: limit, aggregation: p99, headroom: "1.2"}
  readiness:
    minDataPoints: 5
    minTimeSpan: 20s
    maxCV: "2.0"
  behaviors:
    resize:
      interval: 5s
# kubectl ballast node reaches each agent through the API server's pods/proxy.
agent:
  debug:
    proxy:
      enabled: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"-f", filepath.Join(harness.RepoRoot(), "charts", "ballast", "values-local-testing.yaml"), "-f", local, "-f", fast}
}

// loadPod is the load app as a pod that is not enrolled (no mode label).
func loadPod(ns, name, component string, args []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			"app.kubernetes.io/name": "loadapp", "app.kubernetes.io/component": component}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "app", Image: n.Images["ballast-loadapp"], ImagePullPolicy: corev1.PullNever, Args: args,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

func createNamespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if err := n.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

func runningPod(t *testing.T, ctx context.Context, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	if err := n.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	harness.Eventually(t, 2*time.Minute, "pod "+p.Name+" running", func() error {
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.ContainersReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("phase %s, conditions %v", p.Status.Phase, p.Status.Conditions)
	})
	return p
}

func getBody(u string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(u)
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
