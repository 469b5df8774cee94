package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// TLSProxy terminates TLS in front of a plain server: a stand-in for valkey-server's own TLS,
// which the Debian build installed here lacks (no tls-port directive). Its CA is generated per
// proxy; it can require a client certificate signed by that CA.
type TLSProxy struct {
	Addr string // 127.0.0.1:port
	// CAFile verifies the proxy's certificate (valid for 127.0.0.1 and ServerName).
	CAFile string
	// ClientCertFile and ClientKeyFile are a client certificate the proxy accepts.
	ClientCertFile, ClientKeyFile string
	// OtherCAFile is a CA that did not sign the proxy's certificate.
	OtherCAFile string

	ln   net.Listener
	dir  string
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]bool
}

// TLSProxyServerName is a DNS name in the proxy's certificate besides 127.0.0.1.
const TLSProxyServerName = "store.test"

// StartTLSProxy listens on a free loopback port and forwards every TLS connection to backend.
func StartTLSProxy(backend string, requireClientCert bool) (*TLSProxy, error) {
	dir, err := os.MkdirTemp("", "ballast-tls-")
	if err != nil {
		return nil, err
	}
	p := &TLSProxy{dir: dir, open: map[net.Conn]bool{}}
	ca, caKey, err := newCA("ballast test store CA")
	if err != nil {
		return nil, err
	}
	other, _, err := newCA("unrelated CA")
	if err != nil {
		return nil, err
	}
	serverCert, err := leaf(ca, caKey, "store", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	clientCert, err := leaf(ca, caKey, "ballast client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	p.CAFile, p.OtherCAFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other-ca.crt")
	p.ClientCertFile, p.ClientKeyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for path, b := range map[string][]byte{
		p.CAFile: pemCert(ca.Raw), p.OtherCAFile: pemCert(other.Raw),
		p.ClientCertFile: pemCert(clientCert.Certificate[0]), p.ClientKeyFile: pemKey(clientCert.PrivateKey.(*ecdsa.PrivateKey)),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	cfg := &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12, ClientCAs: pool}
	if requireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	p.ln, err = tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		return nil, err
	}
	p.Addr = p.ln.Addr().String()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.forward(c, backend) }()
		}
	}()
	return p, nil
}

func (p *TLSProxy) forward(c net.Conn, backend string) {
	defer c.Close()
	if err := c.(*tls.Conn).Handshake(); err != nil {
		return
	}
	b, err := net.DialTimeout("tcp", backend, 5*time.Second)
	if err != nil {
		return
	}
	defer b.Close()
	p.mu.Lock()
	p.open[c], p.open[b] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	<-done
	p.mu.Lock()
	delete(p.open, c)
	delete(p.open, b)
	p.mu.Unlock()
}

// Stop closes the listener and every forwarded connection and removes the files.
func (p *TLSProxy) Stop() {
	if p == nil {
		return
	}
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	_ = os.RemoveAll(p.dir)
}

func newCA(cn string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	return c, key, err
}

func leaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, usage x509.ExtKeyUsage) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses, tmpl.DNSNames = []net.IP{net.ParseIP("127.0.0.1")}, []string{TLSProxyServerName}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	if der == nil {
		return tls.Certificate{}, errors.New("no certificate")
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(k *ecdsa.PrivateKey) []byte {
	der, _ := x509.MarshalECPrivateKey(k)
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}
