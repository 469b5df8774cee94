package kubelet

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
)

func TestParseConfigz(t *testing.T) {
	cases := map[string]CgroupConfig{
		`{"kubeletconfig":{"cgroupRoot":"/ballast-tier-node-b","cgroupDriver":"cgroupfs","address":"0.0.0.0"}}`: {"/ballast-tier-node-b", "cgroupfs"},
		`{"kubeletconfig":{"cgroupDriver":"systemd"}}`:                                                          {"/", "systemd"},
		`{"kubeletconfig":{"cgroupRoot":""}}`:                                                                   {"/", ""},
	}
	for in, want := range cases {
		if got, err := ParseConfigz([]byte(in)); err != nil || got != want {
			t.Errorf("ParseConfigz(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{``, `{}`, `[]`, `{"kubeletconfig":null}`, `{"kubeletconfig":{"cgroupRoot":3}}`, `<html>`} {
		if got, err := ParseConfigz([]byte(in)); err == nil {
			t.Errorf("ParseConfigz(%q) = %+v, want an error", in, got)
		}
	}
}

func FuzzParseConfigz(f *testing.F) {
	f.Add([]byte(`{"kubeletconfig":{"cgroupRoot":"/x","cgroupDriver":"systemd"}}`))
	f.Add([]byte(`{"kubeletconfig":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cc, err := ParseConfigz(b)
		if err == nil && cc.CgroupRoot == "" {
			t.Fatalf("accepted %q with an empty root", b)
		}
	})
}

// TestCgroupConfigOverTLS: the client reads /configz from the kubelet's base URL with the
// bearer token, and a 403 (no nodes/configz) is ErrForbidden.
func TestCgroupConfigOverTLS(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusOK
	var gotAuth, gotPath string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
		w.WriteHeader(status)
		w.Write([]byte(`{"kubeletconfig":{"cgroupRoot":"/custom","cgroupDriver":"cgroupfs"}}`))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca, tok := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	writePEM(t, ca, srv.Certificate().Raw)
	writeToken(t, tok, "tkn")
	c := newClient(t, Config{URL: srv.URL + "/", CAFile: ca, TokenFile: tok})
	cc, err := c.CgroupConfig(context.Background())
	if err != nil || cc != (CgroupConfig{"/custom", "cgroupfs"}) {
		t.Fatalf("CgroupConfig = %+v, %v", cc, err)
	}
	mu.Lock()
	if gotPath != "/configz" || gotAuth != "Bearer tkn" {
		t.Errorf("request %s with %q", gotPath, gotAuth)
	}
	status = http.StatusForbidden
	mu.Unlock()
	if _, err := c.CgroupConfig(context.Background()); !errors.Is(err, ErrForbidden) {
		t.Errorf("403: %v, want ErrForbidden", err)
	}
}
