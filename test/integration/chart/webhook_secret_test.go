package chart

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ballastk8s/ballast/test/harness"
)

// TestRenderWebhookSecretLookup: the builtin mode's Secret is rendered when none exists or
// Helm owns it, and left out when an older ballast-control created it itself (Helm would
// refuse to adopt it), so an upgrade from such a release keeps working.
func TestRenderWebhookSecretLookup(t *testing.T) {
	h := newHelm(t)
	cx := ctx(t)
	c := srv.Kube.Client
	const ns = "vap-secret"
	if err := c.Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The render is checked against the server, which must know Ballast's kinds.
	crds, err := harness.EmbeddedCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		switch err := c.Create(cx, crd); {
		case err == nil: // made here: removed again, so other tests see the cluster as it was
			t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })
		case !apierrors.IsAlreadyExists(err):
			t.Fatal(err)
		}
	}
	render := func() (bool, error) {
		out, err := h.run(cx, "template", release, chartDir(), "--namespace", ns, "--set", "certManager.enabled=false",
			"--set", "valkey.dataStorage.className=standard", "--dry-run=server", "--kubeconfig", srv.Kube.Kubeconfig)
		if err != nil {
			return false, err
		}
		return parseManifests(t, out).has("Secret", "ballast-webhook-cert"), nil
	}
	harness.Eventually(t, 30*time.Second, "the API server serves Ballast's kinds", func() error { _, err := render(); return err })
	rendered := func() bool {
		t.Helper()
		ok, err := render()
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !rendered() {
		t.Error("no Secret yet: the chart must create it")
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ballast-webhook-cert",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "ballast"}}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("x"), "tls.key": []byte("y")}}
	if err := c.Create(cx, sec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), sec) })
	if rendered() {
		t.Error("a Secret ballast-control created itself is rendered: Helm would refuse the upgrade")
	}
	// As Helm leaves the one it created.
	sec.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	sec.Annotations = map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns}
	if err := c.Update(cx, sec); err != nil {
		t.Fatal(err)
	}
	if !rendered() {
		t.Error("the release's own Secret is not rendered: an upgrade would delete it")
	}
}
