package store

import (
	"os"
	"strings"
	"testing"
)

// TestOptions covers URL parsing, which needs no server (the store tests against real
// Valkey servers live in test/integration/store).
func TestOptions(t *testing.T) {
	cases := map[string]struct {
		url     string
		wantErr string
		nAddr   int
	}{
		"redis":               {url: "redis://127.0.0.1:6379", nAddr: 1},
		"seed nodes":          {url: "redis://10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379", nAddr: 3},
		"tls":                 {url: "rediss://cache.example:6380", nAddr: 1},
		"wrong scheme":        {url: "http://127.0.0.1:6379", wantErr: "scheme must be redis:// or rediss://"},
		"password not echoed": {url: "memcache://user:s3cret@host:1", wantErr: "scheme must be"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := Options(tc.url)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("err = %v, want %q without the password", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(o.InitAddress) != tc.nAddr {
				t.Errorf("addresses = %v, want %d", o.InitAddress, tc.nAddr)
			}
		})
	}
}

func TestConfigClientOption(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/password"
	if err := os.WriteFile(file, []byte("from/file@1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := Config{URL: "redis://:in-url@h:6379", Password: "from-env", PasswordFile: file}.ClientOption()
	if err != nil || o.Password != "from/file@1" {
		t.Fatalf("file must win and lose its newline: %q, %v", o.Password, err)
	}
	if o, _ = (Config{URL: "redis://:in-url@h:6379", Password: "from-env"}).ClientOption(); o.Password != "from-env" {
		t.Fatalf("env must beat the URL: %q", o.Password)
	}
	if o, _ = (Config{URL: "redis://:in-url@h:6379"}).ClientOption(); o.Password != "in-url" {
		t.Fatalf("URL password: %q", o.Password)
	}
	if _, err := (Config{URL: "redis://h:6379", PasswordFile: dir + "/missing"}).ClientOption(); err == nil ||
		!strings.Contains(err.Error(), "--store-password-file") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := (Config{URL: "rediss://h:6379", TLSCAFile: file}).ClientOption(); err == nil ||
		!strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("CA file without PEM: %v", err)
	}
	if o, err := (Config{URL: "rediss://h:6379", TLSServerName: "store.internal"}).ClientOption(); err != nil ||
		o.TLSConfig == nil || o.TLSConfig.ServerName != "store.internal" {
		t.Fatalf("server name: %+v, %v", o.TLSConfig, err)
	}
}

func TestConfigValidateFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"ok":               {cfg: Config{URL: "rediss://h:1", TLSCAFile: "ca.pem", TLSCertFile: "c", TLSKeyFile: "k"}},
		"tls on redis://":  {cfg: Config{URL: "redis://u:secret@h:1", TLSCAFile: "ca.pem"}, want: "need a rediss:// store URL"},
		"cert without key": {cfg: Config{URL: "rediss://h:1", TLSCertFile: "c"}, want: "go together"},
	} {
		err := tc.cfg.ValidateFlags()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: password shown: %v", name, err)
		}
	}
}
