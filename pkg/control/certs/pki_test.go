package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	hosts := []string{"ballast-webhook.ballast-system.svc", "127.0.0.1"}
	life := Lifetimes{CA: 300 * 24 * time.Hour, Serving: 30 * 24 * time.Hour}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	b, changed, err := Plan(Bundle{}, t0, life, hosts)
	if err != nil || !changed {
		t.Fatalf("first plan: changed=%v err=%v", changed, err)
	}
	verify(t, b, hosts, t0)

	if _, changed, _ := Plan(b, t0.Add(time.Hour), life, hosts); changed {
		t.Error("a fresh bundle was changed")
	}

	// Past two thirds of the serving lifetime: new serving certificate, same CA.
	renewed, changed, _ := Plan(b, t0.Add(21*24*time.Hour), life, hosts)
	if !changed || bytes.Equal(renewed.TLSCert, b.TLSCert) || !bytes.Equal(renewed.CACert, b.CACert) {
		t.Fatalf("serving renewal: changed=%v newCert=%v sameCA=%v", changed,
			!bytes.Equal(renewed.TLSCert, b.TLSCert), bytes.Equal(renewed.CACert, b.CACert))
	}
	verify(t, renewed, hosts, t0.Add(21*24*time.Hour))

	// A new host name forces a new serving certificate.
	more := append(hosts, "ballast-webhook.ballast-system.svc.cluster.local")
	h, changed, _ := Plan(b, t0.Add(time.Hour), life, more)
	if !changed {
		t.Fatal("added host did not reissue")
	}
	verify(t, h, more, t0.Add(time.Hour))

	// CA rotation: the old CA stays in the bundle so clients holding it keep working.
	at := t0.Add(250 * 24 * time.Hour)
	rot, changed, _ := Plan(b, at, life, hosts)
	if !changed || bytes.Equal(rot.CACert, b.CACert) {
		t.Fatal("CA was not rotated past two thirds of its life")
	}
	if !bytes.Contains(rot.CABundle, b.CACert) || !bytes.HasPrefix(rot.CABundle, rot.CACert) {
		t.Error("bundle must hold the new CA first and the old CA until it expires")
	}
	verify(t, rot, hosts, at)
	// After the old CA expired it leaves the bundle.
	later, _, _ := Plan(rot, t0.Add(301*24*time.Hour), life, hosts)
	if bytes.Contains(later.CABundle, b.CACert) {
		t.Error("expired CA kept in the bundle")
	}
}

func TestPlanRepairsGarbage(t *testing.T) {
	b, changed, err := Plan(Bundle{CACert: []byte("junk"), CAKey: []byte("junk"), TLSCert: []byte("x"), TLSKey: []byte("y")},
		time.Now(), DefaultLifetimes, []string{"h.svc"})
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	verify(t, b, []string{"h.svc"}, time.Now())
}

func verify(t *testing.T, b Bundle, hosts []string, at time.Time) {
	t.Helper()
	pair, err := tls.X509KeyPair(b.TLSCert, b.TLSKey)
	if err != nil {
		t.Fatalf("key pair: %v", err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.CABundle) {
		t.Fatal("bundle holds no certificate")
	}
	for _, h := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: at}); err != nil {
			t.Errorf("verifying for %s: %v", h, err)
		}
	}
}
