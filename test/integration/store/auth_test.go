package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

// hostilePassword holds every character reserved in URLs.
const hostilePassword = `p/a@s:s?w#o%r&d=;[x]+ y`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPasswordFile: a server with requirepass is reached with the password from a file
// (as the chart mounts it); a missing, wrong or unreadable password gives a clear error
// that never shows the password, and a Lazy keeps retrying and connects once the file is right.
func TestPasswordFile(t *testing.T) {
	v, err := harness.StartValkeyAuth(hostilePassword)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := v.URL()

	good := writeFile(t, "password", hostilePassword+"\n") // a trailing newline, as editors write it
	c, err := store.OpenConfig(store.Config{URL: url, PasswordFile: good})
	if err != nil {
		t.Fatalf("with the password file: %v", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()

	if c, err := store.OpenConfig(store.Config{URL: url, Password: hostilePassword}); err != nil {
		t.Fatalf("with the password from the environment: %v", err)
	} else {
		c.Close()
	}

	for name, tc := range map[string]struct {
		cfg  store.Config
		want string
	}{
		"no password":    {cfg: store.Config{URL: url}, want: "the store requires a password"},
		"wrong password": {cfg: store.Config{URL: url, PasswordFile: writeFile(t, "wrong", "p/a@s:s?w#o%r&d=;[x]+ z")}, want: "refused the credentials"},
		"missing file":   {cfg: store.Config{URL: url, PasswordFile: filepath.Join(t.TempDir(), "absent")}, want: "--store-password-file"},
	} {
		_, err := store.OpenConfig(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s:s?w#o") {
			t.Errorf("%s: the error shows the password: %v", name, err)
		}
	}

	// A Lazy (both binaries' connection) fails while the file is wrong and connects on the
	// first use after it is fixed: a rotated or late-mounted Secret needs no restart.
	file := writeFile(t, "rotating", "stale")
	z := store.NewLazyConfig(store.Config{URL: url, PasswordFile: file})
	defer z.Close()
	l := series.DefaultLayout(24 * time.Hour)
	if _, err := z.Writer(l); err == nil || !strings.Contains(err.Error(), "refused the credentials") {
		t.Fatalf("stale password: %v", err)
	}
	if err := os.WriteFile(file, []byte(hostilePassword), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := z.Writer(l); err != nil {
		t.Fatalf("after the file was fixed: %v", err)
	}

	// The password inside the URL (discouraged) works too, percent-encoded.
	enc := strings.NewReplacer("%", "%25", "/", "%2F", "@", "%40", ":", "%3A", "?", "%3F", "#", "%23", "&", "%26",
		"=", "%3D", ";", "%3B", "[", "%5B", "]", "%5D", "+", "%2B", " ", "%20").Replace(hostilePassword)
	if c, err := store.Open("redis://:" + enc + "@" + v.Addr); err != nil {
		t.Errorf("percent-encoded password in the URL: %v", err)
	} else {
		c.Close()
	}
	// Unencoded in the URL it cannot parse: the error says why and hides the password.
	_, err = store.Open("redis://default:" + hostilePassword + "@" + v.Addr)
	if err == nil || strings.Contains(err.Error(), "s:s?w#o") || strings.Contains(err.Error(), "p/a@s") {
		t.Errorf("raw password in the URL: err = %v", err)
	}
}

// TestTLS: rediss:// with --store-tls-ca-file trusts the given CA instead of the system
// roots, presents a client certificate when asked, and refuses a server its CA did not sign.
// The TLS side is a Go TLS terminator in front of a real valkey-server (with requirepass):
// the Debian valkey-server here is built without TLS.
func TestTLS(t *testing.T) {
	v, err := harness.StartValkeyAuth(hostilePassword)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	p, err := harness.StartTLSProxy(v.Addr, true)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pw := writeFile(t, "password", hostilePassword)
	base := store.Config{URL: "rediss://" + p.Addr, PasswordFile: pw, TLSCAFile: p.CAFile,
		TLSCertFile: p.ClientCertFile, TLSKeyFile: p.ClientKeyFile}

	c, err := store.OpenConfig(base)
	if err != nil {
		t.Fatalf("TLS with the CA and a client certificate: %v", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()

	named := base
	named.URL, named.TLSServerName = "rediss://"+strings.Replace(p.Addr, "127.0.0.1", "localhost", 1), harness.TLSProxyServerName
	if c, err := store.OpenConfig(named); err != nil {
		t.Errorf("--store-tls-server-name: %v", err)
	} else {
		c.Close()
	}

	for name, cfg := range map[string]store.Config{
		"system roots only":   {URL: base.URL, PasswordFile: pw, TLSCertFile: p.ClientCertFile, TLSKeyFile: p.ClientKeyFile},
		"another CA":          {URL: base.URL, PasswordFile: pw, TLSCAFile: p.OtherCAFile, TLSCertFile: p.ClientCertFile, TLSKeyFile: p.ClientKeyFile},
		"no client cert":      {URL: base.URL, PasswordFile: pw, TLSCAFile: p.CAFile},
		"plain to TLS server": {URL: "redis://" + p.Addr, PasswordFile: pw},
	} {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := store.OpenConfig(cfg)
		if err == nil {
			err = c.Ping(cctx)
			c.Close()
		}
		ccancel()
		if err == nil {
			t.Errorf("%s: connected, want a refusal", name)
		}
	}
}

// TestStoreEpoch: the epoch is written once (SET NX) and read back by every client; after a
// FLUSHALL it is missing and the next call writes a newer one.
func TestStoreEpoch(t *testing.T) {
	v, err := harness.StartValkey()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := open(t, v.URL()), open(t, v.URL())
	t0 := time.UnixMilli(time.Now().UnixMilli())
	e1, err := a.StoreEpoch(ctx, t0)
	if err != nil || !e1.Equal(t0) {
		t.Fatalf("first epoch %v, %v; want %v", e1, err, t0)
	}
	if e2, err := b.StoreEpoch(ctx, t0.Add(time.Hour)); err != nil || !e2.Equal(t0) {
		t.Fatalf("second client read %v, %v; want the first epoch %v", e2, err, t0)
	}
	if _, err := v.Do("FLUSHALL"); err != nil {
		t.Fatal(err)
	}
	if e3, err := b.StoreEpoch(ctx, t0.Add(time.Hour)); err != nil || !e3.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after FLUSHALL: %v, %v; want a new epoch", e3, err)
	}
	if _, err := v.Do("SET", series.StoreEpochKey, "garbage"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.StoreEpoch(ctx, t0); err == nil {
		t.Error("a malformed epoch must be reported")
	}
}

// TestPasswordRotatedWhileConnected: the server's password changes and its connections are
// dropped; the reader's reconnects are refused, it drops its client, and once the mounted
// file holds the new password the next read connects with it — no restart.
func TestPasswordRotatedWhileConnected(t *testing.T) {
	v, err := harness.StartValkeyAuth("first-password")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	file := writeFile(t, "password", "first-password")
	r := store.NewProfileReaderConfig(store.Config{URL: v.URL(), PasswordFile: file})
	defer r.Close()
	now := time.Now()
	if _, err := r.Read(ctx, newProfile(), now, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Do("CONFIG", "SET", "requirepass", "second-password"); err != nil {
		t.Fatal(err)
	}
	v.Password = "second-password"
	if _, err := v.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	var refused error
	harness.Eventually(t, 10*time.Second, "the old password refused", func() error {
		_, refused = r.Read(ctx, newProfile(), now, time.Hour)
		if refused == nil {
			return errString("read still succeeds")
		}
		return nil
	})
	if err := os.WriteFile(file, []byte("second-password"), 0o600); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 10*time.Second, "reconnected with the rotated password", func() error {
		_, err := r.Read(ctx, newProfile(), now, time.Hour)
		return err
	})
	t.Logf("refusal while rotating: %v", refused)
}

type errString string

func (e errString) Error() string { return string(e) }
