package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
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

// The debug endpoint answers only callers whose bearer token the API server accepts
// (TokenReview) and whom RBAC allows to get its path (SubjectAccessReview).
func TestDebugEndpointAuth(t *testing.T) {
	ctx := context.Background()
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
	// documents: read-only on its inputs, plus the two review requests. It cannot write.
	kubeconfig := agentIdentity(t, cs, ns)
	a := startAgent(t, node, tree.Root, "--kubeconfig", kubeconfig) // --debug-auth defaults to true
	role := newName("ballast-node-debug")
	mustCreateObj(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{debug.Path, debug.Path + "/*"}, Verbs: []string{"get"}}}})
	mustCreateObj(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "reader"}}})
	tokens := map[string]string{}
	for _, sa := range []string{"reader", "stranger"} {
		mustCreateObj(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
			&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tokens[sa] = tr.Status.Token
	}
	// Wait until RBAC grants the reader (the agent caches a denial for 30 s).
	eventually(t, 10*time.Second, "RBAC for the reader", func() error {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + ns + ":reader",
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			NonResourceAttributes: &authzv1.NonResourceAttributes{Path: debug.Path, Verb: "get"}}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !sar.Status.Allowed {
			return fmt.Errorf("not allowed yet: %s", sar.Status.Reason)
		}
		return nil
	})

	cases := map[string]struct {
		auth   string
		query  string
		status int
	}{
		"no token":                     {"", "", http.StatusUnauthorized},
		"not a bearer token":           {"Basic cmVhZGVyOnNlY3JldA==", "", http.StatusUnauthorized},
		"token the API rejects":        {"Bearer " + randomID(), "", http.StatusUnauthorized},
		"authenticated, no RBAC grant": {"Bearer " + tokens["stranger"], "", http.StatusForbidden},
		"authorized, JSON":             {"Bearer " + tokens["reader"], "", http.StatusOK},
		"authorized, text":             {"Bearer " + tokens["reader"], "?format=text", http.StatusOK},
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
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if c.status != http.StatusOK {
				if strings.Contains(string(body), node) {
					t.Errorf("refused answer leaks the report: %s", body)
				}
				return
			}
			if c.query == "" {
				var rep debug.Report
				if err := json.Unmarshal(body, &rep); err != nil || rep.Node != node {
					t.Errorf("report %+v (err %v)", rep, err)
				}
			} else if !strings.Contains(string(body), "ballast-node on "+node) {
				t.Errorf("text view: %s", body)
			}
		})
	}
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
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
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
