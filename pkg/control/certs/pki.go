// Package certs runs the webhook's built-in certificate authority: a CA and a serving
// certificate kept in one Secret shared by every replica, written to the webhook server's
// certificate folder, mirrored into the MutatingWebhookConfiguration's caBundle and rotated
// before expiry. (With cert-manager the chart mounts its certificate instead and the
// webhook server reloads it on change; this package is then not started.)
package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Secret data keys.
const (
	KeyCACert  = "ca.crt"
	KeyCAKey   = "ca.key"
	KeyTLSCert = "tls.crt"
	KeyTLSKey  = "tls.key"
	// KeyCABundle holds every CA certificate clients should trust: the current CA and, during
	// a CA rotation, the previous one until it expires.
	KeyCABundle = "ca-bundle.crt"
)

// Lifetimes. Serving certificates are renewed after two thirds of their life, the CA
// likewise; the previous CA stays in the bundle until it expires.
type Lifetimes struct {
	CA      time.Duration
	Serving time.Duration
}

// DefaultLifetimes: a 5-year CA and a 90-day serving certificate.
var DefaultLifetimes = Lifetimes{CA: 5 * 365 * 24 * time.Hour, Serving: 90 * 24 * time.Hour}

// Bundle is the parsed content of the Secret.
type Bundle struct {
	CACert, CAKey, TLSCert, TLSKey, CABundle []byte
}

func (b Bundle) data() map[string][]byte {
	return map[string][]byte{KeyCACert: b.CACert, KeyCAKey: b.CAKey, KeyTLSCert: b.TLSCert,
		KeyTLSKey: b.TLSKey, KeyCABundle: b.CABundle}
}

func bundleFrom(d map[string][]byte) Bundle {
	return Bundle{CACert: d[KeyCACert], CAKey: d[KeyCAKey], TLSCert: d[KeyTLSCert], TLSKey: d[KeyTLSKey], CABundle: d[KeyCABundle]}
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func newCA(now time.Time, life time.Duration) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("ballast-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(life),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func newServing(now time.Time, life time.Duration, caCertPEM, caKeyPEM []byte, hosts []string) (certPEM, keyPEM []byte, err error) {
	ca, err := parseCert(caCertPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	kb, _ := pem.Decode(caKeyPEM)
	if kb == nil {
		return nil, nil, errors.New("CA key is not PEM")
	}
	caKey, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing CA key: %w", err)
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(life),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func parseCert(p []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(p)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

// dueForRenewal reports whether a certificate is missing, unparsable, or past two thirds of
// its lifetime at now.
func dueForRenewal(certPEM []byte, now time.Time) bool {
	c, err := parseCert(certPEM)
	if err != nil {
		return true
	}
	life := c.NotAfter.Sub(c.NotBefore)
	return now.After(c.NotBefore.Add(life * 2 / 3))
}

// coversHosts reports whether the serving certificate names every host.
func coversHosts(certPEM []byte, hosts []string) bool {
	c, err := parseCert(certPEM)
	if err != nil {
		return false
	}
	for _, h := range hosts {
		if c.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// Plan computes the next Bundle from the current one at now: it creates what is missing,
// renews what is due, and keeps a replaced CA in the bundle until it expires. The second
// result is false when nothing needs to change.
func Plan(cur Bundle, now time.Time, life Lifetimes, hosts []string) (Bundle, bool, error) {
	next := cur
	changed := false
	if len(cur.CAKey) == 0 || dueForRenewal(cur.CACert, now) {
		caCert, caKey, err := newCA(now, life.CA)
		if err != nil {
			return cur, false, err
		}
		next.CACert, next.CAKey = caCert, caKey
		next.TLSCert = nil // a new CA needs a new serving certificate
		changed = true
	}
	if len(next.TLSKey) == 0 || dueForRenewal(next.TLSCert, now) || !coversHosts(next.TLSCert, hosts) ||
		!signedBy(next.TLSCert, next.CACert) {
		c, k, err := newServing(now, life.Serving, next.CACert, next.CAKey, hosts)
		if err != nil {
			return cur, false, err
		}
		next.TLSCert, next.TLSKey = c, k
		changed = true
	}
	bundle := caBundle(next.CACert, cur.CABundle, now)
	if !bytes.Equal(bundle, cur.CABundle) {
		next.CABundle = bundle
		changed = true
	}
	return next, changed, nil
}

func signedBy(certPEM, caPEM []byte) bool {
	c, err1 := parseCert(certPEM)
	ca, err2 := parseCert(caPEM)
	if err1 != nil || err2 != nil {
		return false
	}
	return c.CheckSignatureFrom(ca) == nil
}

// caBundle is the current CA followed by every unexpired, distinct CA of the old bundle.
func caBundle(current, old []byte, now time.Time) []byte {
	out := append([]byte(nil), current...)
	rest := old
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		enc := pem.EncodeToMemory(b)
		if bytes.Contains(out, enc) {
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil && now.Before(c.NotAfter) {
			out = append(out, enc...)
		}
	}
	return out
}
