package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/kubeletstats"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
)

// stubKubelet serves /stats/summary over TLS like a kubelet: it checks the bearer token
// against the currently accepted one and answers with the configured status and body.
type stubKubelet struct {
	mu       sync.Mutex
	accept   string // token accepted; "" accepts anything
	status   int
	body     []byte
	seen     []string
	srv      *httptest.Server
	caFile   string
	reqPaths []string
}

func newStub(t *testing.T, body []byte) *stubKubelet {
	t.Helper()
	s := &stubKubelet{status: http.StatusOK, body: body}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.caFile = filepath.Join(t.TempDir(), "kubelet-ca.crt")
	writePEM(t, s.caFile, s.srv.Certificate().Raw)
	return s
}

func (s *stubKubelet) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	auth := r.Header.Get("Authorization")
	s.seen = append(s.seen, auth)
	s.reqPaths = append(s.reqPaths, r.URL.Path)
	if r.URL.Path != "/stats/summary" || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	if s.accept != "" && auth != "Bearer "+s.accept {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(s.status)
	w.Write(s.body)
}

// requests returns the Authorization headers and paths seen so far.
func (s *stubKubelet) requests() (auth, paths []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...), append([]string(nil), s.reqPaths...)
}

func (s *stubKubelet) set(accept string, status int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accept, s.status = accept, status
	if body != nil {
		s.body = body
	}
}

func writePEM(t *testing.T, path string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeToken(t *testing.T, path, tok string) {
	t.Helper()
	// Like the kubelet's atomic writer: a new file renamed into place (a new inode).
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCollectOverTLS(t *testing.T) {
	stub := newStub(t, summaryJSON(t))
	stub.set("token-1", http.StatusOK, nil)
	tokenPath := filepath.Join(t.TempDir(), "token")
	writeToken(t, tokenPath, "token-1")
	c := newClient(t, Config{URL: stub.srv.URL + "/", TokenFile: tokenPath, CAFile: stub.caFile})

	now := at(12, 0, 5)
	got, errs, err := c.Collect(context.Background(), now, enrolled)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Containers) != 4 || len(got.Pods) != 1 || len(got.Skipped) != 0 || len(errs) != 6 {
		t.Errorf("collection: %+v, errors %+v", got, errs)
	}
	if got.Containers[0].EphemeralStorageBytes != 60<<20 {
		t.Errorf("app ephemeral storage %d, want 60Mi", got.Containers[0].EphemeralStorageBytes)
	}
	kinds := map[string]int{}
	for _, e := range errs {
		kinds[e.Kind]++
	}
	if kinds["skipped_"+string(kubeletstats.SignalEphemeralStorage)] != 2 {
		t.Errorf("skipped ephemeral-storage %d, want 2 (%v)", kinds["skipped_"+string(kubeletstats.SignalEphemeralStorage)], kinds)
	}
	if _, paths := stub.requests(); paths[0] != "/stats/summary" {
		t.Errorf("path %q", paths[0])
	}

	// The token rotates (new file behind the same name): the next request uses it.
	stub.set("token-2", http.StatusOK, nil)
	writeToken(t, tokenPath, "token-2")
	if _, err := c.Summary(context.Background()); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	seen, _ := stub.requests()
	if last := seen[len(seen)-1]; last != "Bearer token-2" {
		t.Errorf("rotated token not used: %q", last)
	}
}

// TestUnauthorizedRetriesWithFreshToken: a token rewritten in place with the same size and
// mtime looks unchanged to the stat check; the 401 forces a re-read and one retry.
func TestUnauthorizedRetriesWithFreshToken(t *testing.T) {
	stub := newStub(t, summaryJSON(t))
	stub.set("old-token-1", http.StatusOK, nil)
	tokenPath := filepath.Join(t.TempDir(), "token")
	writeToken(t, tokenPath, "old-token-1")
	c := newClient(t, Config{URL: stub.srv.URL, TokenFile: tokenPath, CAFile: stub.caFile})
	if _, err := c.Summary(context.Background()); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(tokenPath)
	if err := os.WriteFile(tokenPath, []byte("new-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tokenPath, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	stub.set("new-token-1", http.StatusOK, nil)
	if _, err := c.Summary(context.Background()); err != nil {
		t.Fatalf("retry with the re-read token failed: %v", err)
	}
	if seen, _ := stub.requests(); len(seen) != 3 || seen[1] != "Bearer old-token-1" || seen[2] != "Bearer new-token-1" {
		t.Errorf("requests %q, want old, old (401), new", seen)
	}

	// A token the kubelet rejects for good: ErrUnauthorized, no retry loop.
	stub.set("something-else", http.StatusOK, nil)
	if _, err := c.Summary(context.Background()); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("got %v, want ErrUnauthorized", err)
	}
	if seen, _ := stub.requests(); len(seen) != 4 {
		t.Errorf("%d requests, want 4 (no retry with an unchanged token)", len(seen))
	}
}

func TestFetchErrors(t *testing.T) {
	cases := map[string]struct {
		status int
		body   string
		errIs  error
		kind   string
	}{
		"403":          {http.StatusForbidden, `nodes "worker-1" is forbidden`, ErrForbidden, KindForbidden},
		"500":          {http.StatusInternalServerError, "internal error", ErrStatus, KindHTTPError},
		"garbage JSON": {http.StatusOK, "{not json", kubeletstats.ErrDecode, KindDecodeError},
		"html":         {http.StatusOK, "<html></html>", kubeletstats.ErrDecode, KindDecodeError},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stub := newStub(t, []byte(tc.body))
			stub.set("", tc.status, nil)
			c := newClient(t, Config{URL: stub.srv.URL, CAFile: stub.caFile})
			_, _, err := c.Collect(context.Background(), at(12, 0, 0), enrolled)
			if !errors.Is(err, tc.errIs) {
				t.Fatalf("got %v, want %v", err, tc.errIs)
			}
			if k := source.KindOf(err); k != tc.kind {
				t.Errorf("error kind %q, want %q", k, tc.kind)
			}
		})
	}
}

func TestTLSVerification(t *testing.T) {
	stub := newStub(t, summaryJSON(t))
	wrongCA := filepath.Join(t.TempDir(), "other-ca.crt")
	writePEM(t, wrongCA, selfSignedCA(t))
	var verr *tls.CertificateVerificationError

	c := newClient(t, Config{URL: stub.srv.URL, CAFile: wrongCA})
	if _, err := c.Summary(context.Background()); !errors.As(err, &verr) {
		t.Errorf("wrong CA: %v, want a certificate verification error", err)
	}
	c = newClient(t, Config{URL: stub.srv.URL}) // system roots do not know the stub's CA
	if _, err := c.Summary(context.Background()); !errors.As(err, &verr) {
		t.Errorf("system roots: %v, want a certificate verification error", err)
	}
	c = newClient(t, Config{URL: stub.srv.URL, InsecureSkipVerify: true})
	if _, err := c.Summary(context.Background()); err != nil {
		t.Errorf("explicitly insecure: %v", err)
	}
}

func TestNewClientValidates(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.crt")
	os.WriteFile(notPEM, []byte("hello"), 0o644)
	cases := map[string]Config{
		"plain http":      {URL: "http://127.0.0.1:10255"},
		"no host":         {URL: "https://"},
		"unparsable":      {URL: "https://[::1"},
		"ca and insecure": {URL: "https://127.0.0.1:10250", CAFile: notPEM, InsecureSkipVerify: true},
		"ca not pem":      {URL: "https://127.0.0.1:10250", CAFile: notPEM},
		"ca missing":      {URL: "https://127.0.0.1:10250", CAFile: notPEM + ".missing"},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := NewClient(cfg); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestTokenFileErrors(t *testing.T) {
	stub := newStub(t, summaryJSON(t))
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for name, path := range map[string]string{"missing": filepath.Join(dir, "missing"), "empty": empty} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, Config{URL: stub.srv.URL, CAFile: stub.caFile, TokenFile: path})
			if _, err := c.Summary(context.Background()); err == nil {
				t.Error("request sent without a usable token")
			}
		})
	}
	if seen, _ := stub.requests(); len(seen) != 0 {
		t.Errorf("%d requests reached the kubelet", len(seen))
	}
}

func TestCollectHonoursContext(t *testing.T) {
	stub := newStub(t, summaryJSON(t))
	c := newClient(t, Config{URL: stub.srv.URL, CAFile: stub.caFile})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.Collect(ctx, at(12, 0, 0), enrolled); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the kubelet CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
