package ballast

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// callerToken finds the bearer token of every kind of token credential and refuses the
// credentials the agent cannot check.
func TestCallerToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(dir, "cred-plugin")
	script := "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exec-token\"}}'\n"
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		cfg     rest.Config
		want    string
		wantErr string
	}{
		"static token": {cfg: rest.Config{BearerToken: "static-token"}, want: "static-token"},
		"token file":   {cfg: rest.Config{BearerTokenFile: tokenFile}, want: "file-token"},
		"exec plugin": {cfg: rest.Config{ExecProvider: &clientcmdapi.ExecConfig{Command: plugin,
			APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}, want: "exec-token"},
		"basic auth":     {cfg: rest.Config{Username: "u", Password: "p"}, wantErr: "port-forward"},
		"no credentials": {cfg: rest.Config{}, wantErr: "does not authenticate with a bearer token"},
		"impersonation":  {cfg: rest.Config{BearerToken: "t", Impersonate: rest.ImpersonationConfig{UserName: "bob"}}, wantErr: "--as"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Host = "https://127.0.0.1:1"
			got, err := callerToken(context.Background(), &cfg)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("token %q (err %v), want %q", got, err, c.want)
			}
		})
	}
}
