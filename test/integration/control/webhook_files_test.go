package control

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/control/certs"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestWebhookCertFilesMode is the cert-manager mode: ballast-control serves the mounted
// certificate, creates no Secret of its own, and picks up a renewed certificate from the
// files without a restart.
func TestWebhookCertFilesMode(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	write := func() {
		b, _, err := certs.Plan(certs.Bundle{}, time.Now(), certs.DefaultLifetimes, []string{"127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		// cert-manager's kubelet-projected Secret updates files by renaming; do the same.
		for name, data := range map[string][]byte{"tls.key": b.TLSKey, "tls.crt": b.TLSCert} {
			if err := os.WriteFile(filepath.Join(dir, name+".new"), data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, name+".new"), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write()
	port, _ := harness.FreePort()
	o := app.NewOptions()
	o.OperatorNamespace, o.LeaderElect, o.RedisURL = operatorNS, false, srv.Valkey.URL()
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.WebhookHost, o.WebhookPort, o.WebhookCertPath, o.WebhookCertMode = "127.0.0.1", port, dir, "files"
	o.WebhookSecretName = "files-mode-must-not-exist"
	o.SkipControllerNameValidation = true
	a, err := app.NewApp(ctx, o, srv.Kube.Config, app.Deps{Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	mgr := a.Manager
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	e := &env{port: port}
	var first string
	eventually(t, 30*time.Second, "webhook serving the mounted certificate", func() error {
		first = servedSerialOrEmpty(e)
		if first == "" {
			return fmt.Errorf("not serving yet")
		}
		return nil
	})
	write()
	eventually(t, 30*time.Second, "renewed certificate picked up", func() error {
		if s := servedSerialOrEmpty(e); s == first || s == "" {
			return fmt.Errorf("still serving %s", s)
		}
		return nil
	})
	err = srv.Kube.Client.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: o.WebhookSecretName}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("files mode created or read a Secret: %v", err)
	}
}
