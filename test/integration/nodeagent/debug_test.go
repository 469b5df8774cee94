package nodeagent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/test/cgroupfixture"
)

// The debug endpoint serves only tokens minted for it: the debug service account's, for
// the audience of the agent's own node (the real API server's TokenReview decides).
// Ordinary API tokens — what older plugins sent — and other nodes' debug tokens get 401,
// debug tokens of another service account 403. A token the agent accepted is refused by the
// API server for every API call (401): an agent that keeps it gains nothing.
func TestDebugEndpointAuth(t *testing.T) {
	ensureCluster(t)
	ns, node := createNamespace(t), newName("node")
	tree, err := cgroupfixture.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(srv.Kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The agent runs as a service account holding exactly the ClusterRole docs/node-agent.md
	// documents: read-only on its inputs, plus TokenReview. It cannot write.
	kubeconfig := agentIdentity(t, cs, ns)
	for _, sa := range []string{debugSA, "stranger"} {
		mustCreateObj(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
	}
	a := startAgent(t, node, tree.Root, "--kubeconfig", kubeconfig, // --debug-auth defaults to true
		"--debug-service-account", ns+"/"+debugSA)
	aud := debug.NodeAudience(node)
	debugToken := mintToken(t, cs, ns, debugSA, aud)

	cases := map[string]struct {
		auth   string
		query  string
		status int
		body   string
	}{
		"no token":              {"", "", http.StatusUnauthorized, "bearer token is required"},
		"not a bearer token":    {"Basic cmVhZGVyOnNlY3JldA==", "", http.StatusUnauthorized, "bearer token is required"},
		"token the API rejects": {"Bearer " + randomID(), "", http.StatusUnauthorized, "not accepted"},
		// What kubectl-ballast before this change sent: the caller's own API token.
		"ordinary API token, older plugin":        {"Bearer " + mintToken(t, cs, ns, "stranger", ""), "", http.StatusUnauthorized, "upgrade kubectl-ballast"},
		"ordinary API token of the debug account": {"Bearer " + mintToken(t, cs, ns, debugSA, ""), "", http.StatusUnauthorized, "upgrade kubectl-ballast"},
		"debug token of another node":             {"Bearer " + mintToken(t, cs, ns, debugSA, debug.NodeAudience("other-node")), "", http.StatusUnauthorized, "not accepted"},
		"bare prefix audience":                    {"Bearer " + mintToken(t, cs, ns, debugSA, debug.Audience), "", http.StatusUnauthorized, "not accepted"},
		"this node's audience, another account":   {"Bearer " + mintToken(t, cs, ns, "stranger", aud), "", http.StatusForbidden, "not to the debug service account"},
		"debug token, JSON":                       {"Bearer " + debugToken, "", http.StatusOK, ""},
		"debug token, text":                       {"Bearer " + debugToken, "?format=text", http.StatusOK, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, a.debug+debug.Path+c.query, nil)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || !strings.Contains(string(body), c.body) {
				t.Fatalf("status %d, want %d with %q: %s", resp.StatusCode, c.status, c.body, body)
			}
			if c.status != http.StatusOK {
				t.Logf("agent: HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
				if strings.Contains(string(body), `"node": "`+node) || strings.Contains(string(body), "Report time:") {
					t.Errorf("refused answer leaks the report: %s", body)
				}
				return
			}
			if c.query == "" {
				var rep debug.Report
				if err := json.Unmarshal(body, &rep); err != nil || rep.Node != node {
					t.Errorf("report %+v (err %v)", rep, err)
				}
			} else if !strings.Contains(string(body), "Node:") || !strings.Contains(string(body), node) {
				t.Errorf("text view: %s", body)
			}
		})
	}
	// The token the agent accepted is worthless anywhere else: the API server refuses it.
	refusedByAPIServer(t, debugToken, mintToken(t, cs, ns, "stranger", ""))
	// The other endpoints carry no workload data and stay open for probes and scrapers.
	for _, u := range []string{a.health + "/healthz", a.health + "/readyz", a.metrics} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", u, resp.StatusCode)
		}
	}
}

// agentRules is the ClusterRole of ballast-node as docs/node-agent.md lists it.
var agentRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"ballast.tightlinesoftware.com"}, Verbs: []string{"get", "list", "watch"},
		Resources: []string{"ballastconfigs", "metricssources", "clusterresourcepolicies", "resourcepolicies", "workloadprofiles"}},
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{""}, Resources: []string{"nodes/stats"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
}

// agentIdentity creates the agent's service account and ClusterRole and returns a
// kubeconfig file authenticating as it.
func agentIdentity(t testing.TB, cs kubernetes.Interface, ns string) string {
	t.Helper()
	name := newName("ballast-node")
	mustCreateObj(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ballast-node"}})
	mustCreateObj(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: agentRules})
	mustCreateObj(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "ballast-node"}}})
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), "ballast-node",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: srv.Kube.Config.Host, CertificateAuthorityData: srv.Kube.Config.CAData}
	cfg.AuthInfos["ballast-node"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "ballast-node"}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustCreateObj(t testing.TB, obj client.Object) {
	t.Helper()
	if err := srv.Kube.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}
