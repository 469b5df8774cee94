package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// FrontProxyClientName is the common name of the certificate kube-apiserver presents to
// aggregated API servers (--requestheader-allowed-names).
const FrontProxyClientName = "front-proxy-client"

// aggregationFlags writes a front-proxy CA and the API server's proxy client certificate
// into dir and returns the kube-apiserver flags that turn on the aggregation layer the way a
// real control plane does: the API server authenticates to aggregated API servers (such as
// metrics-server) with the proxy client certificate and passes the user in X-Remote-*
// headers; it publishes the front-proxy CA in kube-system/extension-apiserver-authentication,
// where the aggregated server finds it.
func aggregationFlags(dir string) (map[string]string, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ballast-test-front-proxy-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("front-proxy CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: FrontProxyClientName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("front-proxy client certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"front-proxy-ca.crt":     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"front-proxy-client.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"front-proxy-client.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return map[string]string{
		"requestheader-client-ca-file":       filepath.Join(dir, "front-proxy-ca.crt"),
		"requestheader-allowed-names":        FrontProxyClientName,
		"requestheader-username-headers":     "X-Remote-User",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"proxy-client-cert-file":             filepath.Join(dir, "front-proxy-client.crt"),
		"proxy-client-key-file":              filepath.Join(dir, "front-proxy-client.key"),
	}, nil
}

// ClientCAFile is the CA that signs the API server's client certificates (the admin user of
// Kubeconfig among them); kubelet stand-ins trust it as a real kubelet's --client-ca-file.
func (k *Kube) ClientCAFile() string {
	return filepath.Join(k.Env.ControlPlane.APIServer.CertDir, "client-cert-auth-ca.crt")
}
