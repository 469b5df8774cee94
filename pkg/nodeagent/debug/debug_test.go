package debug

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func sampleReport() Report {
	exact := false
	return Report{
		Node: "node-1", Time: now,
		Config: ConfigReport{Synced: true, BallastConfigFound: true, Retention: "168h0m0s"},
		Store:  StoreReport{URL: "redis://valkey:6379", LastError: "dial tcp: connection refused", LastErrorAt: now.Add(-2 * time.Second), ConsecutiveFailures: 3},
		Buffer: BufferReport{Filed: 12, FiledLimit: 20000, Dropped: map[string]int64{"buffer_full": 4}},
		Pods: []PodReport{{Namespace: "shop", Name: "web-1", UID: "u1", Mode: "measure", QOS: "Burstable", Interval: "10s",
			Containers: []ContainerReport{{Name: "app", ContainerID: "containerd://abc", CgroupCPU: "/sys/fs/cgroup/kubepods/x",
				CgroupMemory: "/sys/fs/cgroup/kubepods/x", OOMWatched: true,
				Last: []SampleReport{{Signal: "cpu/usage", Value: 230, Source: "cgroup", At: now.Add(-time.Second)},
					{Signal: "memory/peak", Value: 176 << 20, Source: "cgroup", At: now, Exact: &exact}},
				Errors:         []ErrorReport{{Source: "kubelet", Message: "ephemeral-storage reading skipped", At: now, Count: 2}},
				OOMKills:       map[string]int64{"pod": 1},
				MemoryPressure: &PressureReport{At: now.Add(-3 * time.Second), Interval: "10s", StallPerSec: 125_000, Source: "psi"}}}}},
		Series: []SeriesReport{{Profile: "0123456789abcdef", Container: "app", Resource: "memory", Signal: "usage", Recorded: 7,
			Windows: []WindowReport{{Start: now.Truncate(5 * time.Minute), Count: 7, Min: 1 << 20, Max: 3 << 30}}}},
	}
}

func TestHandlerNegotiatesFormat(t *testing.T) {
	var gotFilter Filter
	h := Handler(func(f Filter) Report { gotFilter = f; return sampleReport() })
	cases := map[string]struct {
		query, accept, method string
		wantType              string
		wantStatus            int
	}{
		"JSON by default":             {"", "", http.MethodGet, "application/json", 200},
		"text by query":               {"?format=text", "", http.MethodGet, "text/plain", 200},
		"query wins over Accept":      {"?format=json", "text/plain", http.MethodGet, "application/json", 200},
		"text by Accept":              {"", "text/plain;q=0.9, application/json;q=0.5", http.MethodGet, "text/plain", 200},
		"first servable type decides": {"", "text/html, application/json, text/plain", http.MethodGet, "application/json", 200},
		"read only":                   {"", "", http.MethodPost, "", http.StatusMethodNotAllowed},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, Path+c.query, nil)
			if c.accept != "" {
				req.Header.Set("Accept", c.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, c.wantStatus)
			}
			if c.wantType != "" && !strings.HasPrefix(rec.Header().Get("Content-Type"), c.wantType) {
				t.Errorf("content type %q, want %s", rec.Header().Get("Content-Type"), c.wantType)
			}
			if c.wantType == "application/json" {
				var r Report
				if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.Node != "node-1" {
					t.Errorf("JSON report %+v (err %v)", r, err)
				}
			}
		})
	}
	req := httptest.NewRequest(http.MethodGet, Path+"?pod=shop/web-1", nil)
	h.ServeHTTP(httptest.NewRecorder(), req)
	if gotFilter.Pod != "shop/web-1" {
		t.Errorf("filter %+v", gotFilter)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestTextView: the one text rendering (the agent's ?format=text and kubectl ballast node)
// of a report holding one of everything, compared with testdata/report.golden (-update
// rewrites it), plus the facts a reader must find in it, so a golden rewritten by mistake
// still fails on a lost fact.
func TestTextView(t *testing.T) {
	cases := map[string]struct {
		agent string
		want  []string
		not   []string
	}{
		"from the agent's endpoint": {not: []string{"Agent:"}},
		"from kubectl, naming the agent pod": {agent: "ballast-system/ballast-node-x7k2p",
			want: []string{"Agent:         ballast-system/ballast-node-x7k2p"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteText(&b, sampleReport(), tc.agent); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, want := range append([]string{
				"Node:          node-1",
				"DISCONNECTED", "3 consecutive failures", "last error 2s ago", "dial tcp: connection refused",
				"filed 12/20000", "buffer_full=4",
				"shop/web-1", "10s", "Burstable", "/sys/fs/cgroup/kubepods/x", "containerd://abc",
				"cpu/usage", "230m", "176.00Mi", "(max of samples)",
				"web-1/app: kubelet error x2", "web-1/app: OOM kills pod=1",
				"web-1/app: memory pressure 12.5% stalled over 10s via psi, 3s ago",
				"profile 0123456789abcdef   app", "memory/usage", "1.00Mi..3.00Gi", "Held windows:",
			}, tc.want...) {
				if !strings.Contains(out, want) {
					t.Errorf("text view lacks %q:\n%s", want, out)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(out, not) {
					t.Errorf("text view holds %q:\n%s", not, out)
				}
			}
			if tc.agent == "" {
				golden(t, "report", out)
			}
		})
	}
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
		t.Errorf("%s differs (-want +got):\n%s", path, cmp.Diff(string(want), got))
	}
}

// fakeReviewer answers from a table, as a TokenReview for one audience would (a token
// valid for other audiences only is not authenticated), and counts calls.
type fakeReviewer struct {
	users   map[string]User
	err     error
	reviews int
}

func (f *fakeReviewer) ReviewToken(_ context.Context, token, audience string) (User, bool, error) {
	f.reviews++
	if f.err != nil {
		return User{}, false, f.err
	}
	u, ok := f.users[token]
	if !ok || !slices.Contains(u.Audiences, audience) {
		return User{}, false, nil
	}
	return u, true, nil
}

// Only the debug service account's tokens for this node's audience get in; an ordinary
// API token (audience: the API server) or another node's debug token gets 401 with a
// message naming the token to send instead.
func TestAuth(t *testing.T) {
	debugSA := ServiceAccountUser("ballast-system", "ballast-debug")
	fr := &fakeReviewer{users: map[string]User{
		"good":             {Name: debugSA, Audiences: []string{NodeAudience("node-1")}},
		"other-node":       {Name: debugSA, Audiences: []string{NodeAudience("node-2")}},
		"other-account":    {Name: ServiceAccountUser("shop", "web"), Audiences: []string{NodeAudience("node-1")}},
		"caller-api-token": {Name: "alice", Audiences: []string{"https://kubernetes.default.svc"}},
	}}
	a := NewAuth(fr, Accept{Namespace: "ballast-system", ServiceAccount: "ballast-debug", Node: "node-1"})
	secret := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "secret") })
	h := a.Wrap(secret)
	do := func(method, header, authz string) (int, string) {
		req := httptest.NewRequest(method, Path, nil)
		if authz != "" {
			req.Header.Set(header, authz)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	cases := map[string]struct {
		authz    string
		want     int
		wantBody string
	}{
		"no credentials":             {"", http.StatusUnauthorized, "--audience ballast-node-debug/node-1"},
		"basic credentials":          {"Basic Zm9vOmJhcg==", http.StatusUnauthorized, "never your own API token"},
		"empty bearer":               {"Bearer ", http.StatusUnauthorized, "upgrade kubectl-ballast"},
		"ordinary API token":         {"Bearer caller-api-token", http.StatusUnauthorized, "upgrade kubectl-ballast"},
		"another node's debug token": {"Bearer other-node", http.StatusUnauthorized, "not accepted"},
		"another service account":    {"Bearer other-account", http.StatusForbidden, `belongs to "system:serviceaccount:shop:web"`},
		"debug token of this node":   {"Bearer good", http.StatusOK, "secret"},
		"scheme is case-insensitive": {"bearer good", http.StatusOK, "secret"},
		"debug token, HEAD":          {"Bearer good", http.StatusOK, ""},
	}
	for name, c := range cases {
		for _, header := range []string{"Authorization", ProxyAuthHeader} {
			t.Run(name+" in "+header, func(t *testing.T) {
				method := http.MethodGet
				if strings.Contains(name, "HEAD") {
					method = http.MethodHead
				}
				code, body := do(method, header, c.authz)
				if code != c.want {
					t.Fatalf("status %d, want %d (%s)", code, c.want, body)
				}
				if !strings.Contains(body, c.wantBody) || (code != http.StatusOK && strings.Contains(body, "secret")) {
					t.Errorf("body %q, want it to contain %q", body, c.wantBody)
				}
			})
		}
	}

	// A reviewer that confirms no audience (a misbehaving authenticator) gets nobody in.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, Path, nil)
	req.Header.Set("Authorization", "Bearer good")
	NewAuth(reviewerFunc(func(string, string) (User, bool, error) { return User{Name: debugSA}, true, nil }),
		Accept{Namespace: "ballast-system", ServiceAccount: "ballast-debug", Node: "node-1"}).Wrap(secret).ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "audience") {
		t.Errorf("audience not confirmed: %d %s", rec.Code, rec.Body.String())
	}

	// Reviews are cached: repeating a request asks nothing new; entries expire.
	reviews := fr.reviews
	if code, _ := do(http.MethodGet, "Authorization", "Bearer good"); code != http.StatusOK || fr.reviews != reviews {
		t.Errorf("cached request: %d, reviews %d→%d", code, reviews, fr.reviews)
	}
	a.now = func() time.Time { return time.Now().Add(10 * time.Minute) }
	if _, _ = do(http.MethodGet, "Authorization", "Bearer good"); fr.reviews == reviews {
		t.Errorf("expired token review was not repeated")
	}

	// When the API server cannot answer, nobody gets in.
	fr2 := &fakeReviewer{err: errors.New("connection refused")}
	h2 := NewAuth(fr2, Accept{Namespace: "ballast-system", ServiceAccount: "ballast-debug", Node: "node-1"}).Wrap(secret)
	req = httptest.NewRequest(http.MethodGet, Path, nil)
	req.Header.Set("Authorization", "Bearer good")
	rec = httptest.NewRecorder()
	h2.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "secret") {
		t.Errorf("reviewer down: %d %q", rec.Code, rec.Body.String())
	}
}

type reviewerFunc func(token, audience string) (User, bool, error)

func (f reviewerFunc) ReviewToken(_ context.Context, token, audience string) (User, bool, error) {
	return f(token, audience)
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8082": true, "[::1]:8082": true, "localhost:8082": true, "127.0.0.2:1": true,
		":8082": false, "0.0.0.0:8082": false, "10.0.0.5:8082": false, "node-1:8082": false, "garbage": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %t, want %t", addr, got, want)
		}
	}
}

func TestSelfSigned(t *testing.T) {
	cert, err := SelfSigned([]string{"node-1", "10.0.0.5", ""}, now)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := c.VerifyHostname("node-1"); err != nil {
		t.Error(err)
	}
	if err := c.VerifyHostname("10.0.0.5"); err != nil {
		t.Error(err)
	}
	if !c.NotAfter.After(now.Add(300 * 24 * time.Hour)) {
		t.Errorf("expires %v", c.NotAfter)
	}
}
