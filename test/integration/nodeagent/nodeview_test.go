package nodeagent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/test/harness"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// `kubectl ballast node` reaches the real agent through the real API server's pods/proxy
// with a token it minted for the agent (the debug service account's, for the audience of
// the agent's node only): the API server authorizes get pods/proxy on the
// agent pod and create serviceaccounts/token on the debug service account, the agent
// checks the token (TokenReview for its audience). A caller missing a grant is refused by
// the API server; the caller's own token (an older plugin's way) is refused by the agent.
func TestNodeViewThroughPodsProxy(t *testing.T) {
	ensureCluster(t)
	ns, node := createNamespace(t), newName("node")
	cs, err := kubernetes.NewForConfig(srv.Kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	// A kwok-style node (no kubelet; the agent runs on loopback) with the capacity the
	// agent bounds samples by.
	mustCreateObj(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}})

	tree := newSim(t)
	prof, hash := newName("web"), newHash()
	createProfile(t, prof, hash)
	// hog reads 16 GiB on an 8 GiB node: implausible, so its memory samples are rejected.
	pod := &podSpec{ns: ns, name: "web-1", node: node, profile: prof, policy: "fast", containers: []string{"app", "hog"}}
	pod.create(t)
	tree.addPod(t, pod, 0, map[string]simCtr{"app": {milli: 250, v: memValues(100*mi, 0)}, "hog": {milli: 250, v: memValues(16<<30, 0)}})

	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	agentPod := createAgentPod(t, ns, node, port)
	mustCreateObj(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: debugSA}})
	a := startAgent(t, node, tree.tree.Root, "--kubeconfig", agentIdentity(t, cs, ns),
		"--debug-proxy-bind-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--debug-service-account", ns+"/"+debugSA)

	// Three callers: all may find the agent pod (list pods); viewer holds the chart's debug
	// Role (docs/kubectl-ballast.md), noproxy lacks pods/proxy, nomint lacks
	// serviceaccounts/token. None has any grant on /debug/ballast: the agent checks none.
	grant := func(sa string, proxy, mint bool) {
		rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}
		if proxy {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/proxy"}, Verbs: []string{"get"}})
		}
		if mint {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"},
				ResourceNames: []string{debugSA}, Verbs: []string{"create"}})
		}
		mustCreateObj(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}, Rules: rules})
		mustCreateObj(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}})
	}
	grant("viewer", true, true)
	grant("noproxy", false, true)
	grant("nomint", true, false)
	kc, own := map[string]string{}, map[string]string{}
	for _, sa := range []string{"viewer", "noproxy", "nomint"} {
		kc[sa], own[sa] = tokenKubeconfig(t, cs, ns, sa)
	}

	// The viewer's view, once the agent has sampled the pod and flushed once.
	var rep debug.Report
	eventually(t, 30*time.Second, "the viewer's report with a flushed sample", func() error {
		r := runPlugin(t, kc["viewer"], "node", node, "-n", ns, "-o", "json")
		if r.code != 0 {
			return fmt.Errorf("exit %d: %s", r.code, r.stderr)
		}
		rep = debug.Report{}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			return err
		}
		if len(rep.Pods) != 1 || len(rep.Pods[0].Containers) != 2 {
			return fmt.Errorf("pod not seen yet: %+v", rep.Pods)
		}
		app, hog := rep.Pods[0].Containers[0], rep.Pods[0].Containers[1]
		if len(app.Last) < 3 || len(hog.Last) < 1 || len(hog.Errors) < 1 || len(rep.Series) < 4 || rep.Store.FlushedWindows == 0 {
			return fmt.Errorf("not sampled, rejected and flushed yet: %d+%d last samples, %d errors, %d series, %d windows written",
				len(app.Last), len(hog.Last), len(hog.Errors), len(rep.Series), rep.Store.FlushedWindows)
		}
		return nil
	})
	if rep.Node != node || rep.Pods[0].Hash != hash {
		t.Errorf("report of node %q, pod hash %q; want %q, %q", rep.Node, rep.Pods[0].Hash, node, hash)
	}
	// The Node's capacity bounds the samples: hog's memory never reaches a series.
	for _, s := range rep.Series {
		if s.Container == "hog" && s.Resource == "memory" {
			t.Errorf("implausible memory of hog recorded: %+v", s)
		}
	}
	if n, err := a.metric("ballast_node_samples_rejected_total", `reason="above_node_capacity"`); err != nil || n < 1 {
		t.Errorf("ballast_node_samples_rejected_total{reason=above_node_capacity} = %v (err %v), want ≥ 1", n, err)
	}
	start := time.Now()
	table := runPlugin(t, kc["viewer"], "node", node, "-n", ns)
	t.Logf("kubectl ballast node (in process, through pods/proxy): %v", time.Since(start).Round(time.Millisecond))
	if table.code != 0 || !strings.Contains(table.stdout, "Node:") || !strings.Contains(table.stdout, ns+"/web-1") {
		t.Errorf("table view: exit %d\n%s%s", table.code, table.stdout, table.stderr)
	}
	// The golden file holds the table of this real report with its run-dependent values
	// (names, times, counters) replaced by fixed ones.
	var b bytes.Buffer
	agentObj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ballast-system", Name: "ballast-node-x7k2p"}}
	if err := ballast.WriteNodeReport(&b, agentObj, stableReport(rep, tree.tree.Root)); err != nil {
		t.Fatal(err)
	}
	golden(t, "node-view", b.String())

	// Refusals: each names who refused, and the agent's report never leaks.
	for sa, want := range map[string]string{
		"noproxy": fmt.Sprintf(`the API server refused (HTTP 403): pods "https:%s:%d" is forbidden`, agentPod, port),
		"nomint":  fmt.Sprintf(`minting a debug token for %s/%s (needs create serviceaccounts/token on it): serviceaccounts %q is forbidden`, ns, debugSA, debugSA),
	} {
		r := runPlugin(t, kc[sa], "node", node, "-n", ns)
		if r.code != ballast.ExitUsage || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout+r.stderr, "web-1") {
			t.Errorf("%s: exit %d, stderr %q, want exit %d and %q", sa, r.code, r.stderr, ballast.ExitUsage, want)
		}
	}
	// An older plugin sent the caller's own token in Ballast-Authorization: the agent now
	// refuses it (TokenReview for its audience fails) and says what to do.
	status, body := proxyGet(t, own["viewer"], ns, agentPod, port, own["viewer"])
	t.Logf("agent's answer to the caller's own API token: HTTP %d %s", status, body)
	if status != http.StatusUnauthorized || !strings.Contains(body, "upgrade kubectl-ballast") || strings.Contains(body, "web-1") {
		t.Errorf("caller's own token through pods/proxy: HTTP %d %q, want 401 naming the upgrade", status, body)
	}
	// What a compromised agent captures from the same caller is worthless elsewhere.
	checkCapturedToken(t, ns, kc["viewer"], own["viewer"], agentPod, port)
	// The pods/proxy listener serves TLS and checks tokens itself: a caller on the pod
	// network without a token gets 401, never the report.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d%s", port, debug.Path))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("pods/proxy listener without a token: %d, want 401", resp.StatusCode)
	}
}

// createAgentPod creates the agent's Pod object as the chart renders it (labels, the
// debug service account in its environment, the debug-proxy port) with the status a kubelet would report; its pod IP is fakePodIP.
func createAgentPod(t *testing.T, ns, node string, port int) string {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: newName("ballast-node"),
		Labels: map[string]string{"app.kubernetes.io/part-of": "ballast", "app.kubernetes.io/component": "agent"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "ballast-node", Image: "ballast-node",
			Env:   []corev1.EnvVar{{Name: "BALLAST_DEBUG_SERVICE_ACCOUNT", Value: ns + "/" + debugSA}},
			Ports: []corev1.ContainerPort{{Name: "debug-proxy", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}}}}}
	mustCreateObj(t, p)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fakePodIP, PodIPs: []corev1.PodIP{{IP: fakePodIP}}}
	if err := srv.Kube.Client.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p.Name
}

// tokenKubeconfig creates service account sa and a kubeconfig authenticating with its
// (ordinary, API-server audience) token, and returns both.
func tokenKubeconfig(t *testing.T, cs kubernetes.Interface, ns, sa string) (string, string) {
	t.Helper()
	mustCreateObj(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: srv.Kube.Config.Host, CertificateAuthorityData: srv.Kube.Config.CAData}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: sa, Namespace: ns}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig-"+sa)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path, tr.Status.Token
}

// proxyGet gets the agent's debug path through pods/proxy as the caller with token, the
// agent's header carrying agentToken, and returns the status and body.
func proxyGet(t *testing.T, token, ns, pod string, port int, agentToken string) (int, string) {
	t.Helper()
	cfg := rest.AnonymousClientConfig(srv.Kube.Config)
	cfg.BearerToken = token
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := fmt.Sprintf("%s/api/v1/namespaces/%s/pods/https:%s:%d/proxy%s", strings.TrimSuffix(cfg.Host, "/"), ns, pod, port, debug.Path)
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set(debug.ProxyAuthHeader, "Bearer "+agentToken)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

type pluginResult struct {
	code           int
	stdout, stderr string
}

// runPlugin runs `kubectl ballast` in process, as the binary's main does.
func runPlugin(t *testing.T, kubeconfig string, args ...string) pluginResult {
	t.Helper()
	var out, errb bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}
	code := ballast.Run(context.Background(), append([]string{"--kubeconfig", kubeconfig}, args...), streams)
	return pluginResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// stableReport replaces what differs between runs: names, the Valkey port, times (kept
// as ages relative to the report time, rounded to whole seconds), counters.
func stableReport(r debug.Report, root string) debug.Report {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tm := func(t *time.Time) {
		if !t.IsZero() {
			*t = at.Add(-r.Time.Sub(*t).Round(time.Second))
		}
	}
	r.Node = "worker-1"
	r.Store.URL = "redis://127.0.0.1:6379"
	r.Store.LastFlush = at.Add(-time.Second)
	tm(&r.Store.LastErrorAt)
	r.Store.LastFlushDuration, r.Store.FlushedWindows, r.Store.FlushedSamples, r.Store.LastFlushWindows = "2ms", 6, 60, 6
	r.Buffer.Filed, r.Buffer.Pending = 0, 0 // between two 1 s flushes
	for i := range r.Sources {
		s := &r.Sources[i]
		s.Detail = strings.ReplaceAll(s.Detail, root, "/host/sys/fs/cgroup")
		tm(&s.LastErrorAt)
		s.LastRun, s.LastDuration, s.Runs = at.Add(-time.Second), "1ms", 30
	}
	for i := range r.Pods {
		p := &r.Pods[i]
		uid := p.UID
		p.Namespace, p.UID, p.ProfileRef, p.Hash = "shop", "6f1c2a9e", "web-fast", "0123456789abcdef"
		for j := range p.Containers {
			c := &p.Containers[j]
			// The cgroup directories name the run's root, pod UID and container ID.
			dir := strings.NewReplacer(root, "/host/sys/fs/cgroup", uid, p.UID, strings.ReplaceAll(uid, "-", "_"), p.UID,
				strings.TrimPrefix(c.ContainerID, "containerd://"), "4a3b"+c.Name)
			c.CgroupMemory, c.CgroupCPU = dir.Replace(c.CgroupMemory), dir.Replace(c.CgroupCPU)
			c.ContainerID = "containerd://4a3b"
			c.MemoryPressure, c.ReclaimStall = nil, nil // measured over jittery intervals
			for k := range c.Errors {
				c.Errors[k].At, c.Errors[k].Count = at.Add(-time.Second), 30
			}
			for k := range c.Last {
				c.Last[k].At = at.Add(-time.Second)
				if strings.HasPrefix(c.Last[k].Signal, "cpu") {
					c.Last[k].Value = 250 // the fixture's rate, measured over a jittery interval
				}
			}
		}
	}
	for i := range r.Series {
		s := &r.Series[i]
		if s.Profile != "" {
			s.Profile = "0123456789abcdef"
		}
		s.Recorded, s.Flushed, s.Windows = 30, 30, nil
	}
	r.Time = at
	return r
}

// golden compares got with testdata/name.golden (rewriting it under -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run with -update to create it): %v", path, err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (run with -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
