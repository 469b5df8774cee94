package store

import (
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
