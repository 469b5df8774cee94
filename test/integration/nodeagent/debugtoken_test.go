package nodeagent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
)

// debugSA is the debug service account as the chart renders it (<fullname>-debug).
const debugSA = "ballast-debug"

// mintToken creates a 10-minute token of service account sa, for audience (empty: the API
// server's own).
func mintToken(t testing.TB, cs kubernetes.Interface, ns, sa, audience string) string {
	t.Helper()
	spec := authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}
	if audience != "" {
		spec.Audiences = []string{audience}
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authnv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// refusedByAPIServer checks that the API server refuses token as a bearer credential: a
// plain read (GET /api/v1/namespaces) and "who am I" (SelfSubjectReview) both get 401,
// where control, an ordinary token, gets past authentication (201 for the review).
func refusedByAPIServer(t testing.TB, token, control string) {
	t.Helper()
	do := func(token, method, path, body string) int {
		cfg := rest.AnonymousClientConfig(srv.Kube.Config)
		cfg.BearerToken = token
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(method, strings.TrimSuffix(cfg.Host, "/")+path, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const review = `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	if code := do(control, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", review); code != http.StatusCreated {
		t.Fatalf("control: an ordinary token's SelfSubjectReview got HTTP %d, want 201", code)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/namespaces", ""},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", review},
	} {
		code := do(token, c.method, c.path, c.body)
		t.Logf("API server, %s %s with the debug token: HTTP %d", c.method, c.path, code)
		if code != http.StatusUnauthorized {
			t.Errorf("%s %s with the debug token: HTTP %d, want 401", c.method, c.path, code)
		}
	}
}

// recorder is a compromised agent: a TLS server behind pods/proxy that keeps every header
// it receives and answers a minimal report.
type recorder struct {
	mu      sync.Mutex
	headers []http.Header
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"node":"compromised"}`)
}

// checkCapturedToken runs `kubectl ballast node` as the caller (kubeconfig, own token) against
// a compromised agent on a node of its own, and checks what that agent captured: never the
// caller's token, only the minted debug token (its node's audience, 10 minutes), which the
// API server refuses (401) and the real agent (pod realPod, pods/proxy port realPort) on
// another node refuses too (401: another node's audience).
func checkCapturedToken(t *testing.T, ns, kubeconfig, own, realPod string, realPort int) {
	rec := &recorder{}
	ts := httptest.NewTLSServer(rec)
	defer ts.Close()
	_, portStr, _ := net.SplitHostPort(ts.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	node := newName("compromised")
	createAgentPod(t, ns, node, port)

	r := runPlugin(t, kubeconfig, "node", node, "-n", ns, "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, "compromised") {
		t.Fatalf("plugin against the compromised agent: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	rec.mu.Lock()
	headers := rec.headers
	rec.mu.Unlock()
	if len(headers) != 1 {
		t.Fatalf("%d requests reached the compromised agent, want 1", len(headers))
	}
	for name, vs := range headers[0] {
		for _, v := range vs {
			if strings.Contains(v, own) {
				t.Errorf("the agent received the caller's own token in %s", name)
			}
		}
	}
	scheme, captured, _ := strings.Cut(headers[0].Get(debug.ProxyAuthHeader), " ")
	if scheme != "Bearer" || captured == "" {
		t.Fatalf("no debug token in %s: %v", debug.ProxyAuthHeader, headers[0])
	}
	claims := jwtClaims(t, captured)
	t.Logf("captured token: aud %v, lifetime %ds", claims.Aud, claims.Exp-claims.Iat)
	if want := debug.NodeAudience(node); len(claims.Aud) != 1 || claims.Aud[0] != want || claims.Exp-claims.Iat != 600 {
		t.Errorf("captured token claims %+v, want audience %s only, 600 s", claims, want)
	}
	// Replayed anywhere else, it gets nothing.
	refusedByAPIServer(t, captured, own)
	status, body := proxyGet(t, own, ns, realPod, realPort, captured)
	t.Logf("real agent's answer to the replayed token: HTTP %d %s", status, body)
	if status != http.StatusUnauthorized || !strings.Contains(body, "not accepted") {
		t.Errorf("captured token replayed to another agent: HTTP %d %q, want 401", status, body)
	}
}

type tokenClaims struct {
	Aud []string `json:"aud"`
	Iat int64    `json:"iat"`
	Exp int64    `json:"exp"`
}

// jwtClaims decodes (without verifying: the API server does that) a token's claims.
func jwtClaims(t *testing.T, token string) tokenClaims {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c tokenClaims
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
