package app

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// testCA is a throw-away CA that signs serving and client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for cn with the given usage.
func (ca testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestWebhookClientCA runs controller-runtime's webhook server as NewApp builds it with
// --webhook-client-ca: a caller without a client certificate, or with one from another CA,
// is refused at the TLS handshake; the API server's certificate gets through; the
// server's own readiness check (a TLS dial without a certificate) still passes.
func TestWebhookClientCA(t *testing.T) {
	dir := t.TempDir()
	serving, client, stranger := newTestCA(t, "serving"), newTestCA(t, "apiserver-clients"), newTestCA(t, "stranger")
	crt, key := serving.issue(t, "ballast-webhook", x509.ExtKeyUsageServerAuth)
	for name, b := range map[string][]byte{"tls.crt": crt, "tls.key": key, "client-ca.crt": client.pem} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := NewOptions()
	if _, err := (&Options{WebhookClientCA: filepath.Join(dir, "tls.key")}).webhookClientAuth(); err == nil {
		t.Error("a file without a certificate was accepted as --webhook-client-ca")
	}
	o.WebhookClientCA = filepath.Join(dir, "client-ca.crt")
	opts, err := o.webhookClientAuth()
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir, TLSOpts: opts})
	srv.Register("/probe", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Start(ctx) }()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serving.pem)
	post := func(certs ...tls.Certificate) error {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		resp, err := c.Post("https://127.0.0.1:"+strconv.Itoa(port)+"/probe", "application/json", bytes.NewReader([]byte("{}")))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	pair := func(ca testCA) tls.Certificate {
		c, k := ca.issue(t, "kube-apiserver", x509.ExtKeyUsageClientAuth)
		p, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Wait for the server with the accepted certificate (polling, not sleeping).
	good := pair(client)
	deadline := time.Now().Add(20 * time.Second)
	for err := post(good); err != nil; err = post(good) {
		if time.Now().After(deadline) {
			t.Fatalf("the API server's certificate is refused: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := post(); err == nil {
		t.Error("a request without a client certificate was served")
	}
	if err := post(pair(stranger)); err == nil {
		t.Error("a client certificate from another CA was accepted")
	}
	if err := srv.StartedChecker()(nil); err != nil {
		t.Errorf("readiness check fails with client authentication on: %v", err)
	}
}
