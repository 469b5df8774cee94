package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/certs"
	"github.com/ballastk8s/ballast/pkg/control/hpa"
	"github.com/ballastk8s/ballast/pkg/control/webhook"
)

// certDir is where the webhook server reads tls.crt and tls.key.
func (o *Options) certDir() string {
	if o.WebhookCertPath != "" {
		return o.WebhookCertPath
	}
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// webhookClientAuth is the webhook server's client authentication: with
// --webhook-client-ca, a TLS handshake without a client certificate signed by that CA
// fails before any request is read.
func (o *Options) webhookClientAuth() ([]func(*tls.Config), error) {
	if o.WebhookClientCA == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(o.WebhookClientCA)
	if err != nil {
		return nil, fmt.Errorf("--webhook-client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--webhook-client-ca %s: no PEM certificate in it", o.WebhookClientCA)
	}
	return []func(*tls.Config){func(c *tls.Config) {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}}, nil
}

// dnsNames are the serving certificate's names in builtin mode.
func (o *Options) dnsNames() []string {
	if o.WebhookDNSNames != "" {
		return strings.Split(o.WebhookDNSNames, ",")
	}
	svc := strings.TrimSuffix(o.WebhookSecretName, "-cert")
	return []string{svc + "." + o.OperatorNamespace + ".svc", svc + "." + o.OperatorNamespace + ".svc.cluster.local"}
}

// setupWebhook prepares certificates (builtin mode: before the server starts, so its first
// handshake already works) and registers the admission handler.
func setupWebhook(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, o *Options, d Deps, scaler *hpa.Scaler) error {
	if o.WebhookCertMode == "builtin" {
		live, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			return err
		}
		cm := certs.New(live, certs.Options{Namespace: o.OperatorNamespace, SecretName: o.WebhookSecretName,
			Webhook: o.WebhookConfigName, Hosts: o.dnsNames(), CertDir: o.certDir()})
		if err := cm.Ensure(ctx); err != nil {
			return fmt.Errorf("preparing webhook certificates: %w", err)
		}
		if err := mgr.Add(cm); err != nil {
			return err
		}
	}
	h := webhook.New(mgr.GetCache(), mgr.GetScheme(), d.State, d.Resolver, webhook.NewMetrics(d.Registry, d.shared),
		o.DryRun == "apply" || o.DryRun == "all", d.log(ComponentWebhook))
	h.SetHPA(hpa.Lookup{Reader: mgr.GetCache(), ScaleTarget: o.HPAScaleTarget}, scaler, d.Events)
	mgr.GetWebhookServer().Register(ballastv1.WebhookPath, &admission.Webhook{Handler: h})
	// Start the owner-walk metadata informers with the manager, not on the first admission,
	// and the Namespace one that bounds the webhook's namespace label (metrics.KnownNamespace).
	for _, gvk := range []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, {Group: "batch", Version: "v1", Kind: "Job"},
		{Group: "", Version: "v1", Kind: "Namespace"}} {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		if _, err := mgr.GetCache().GetInformer(ctx, m); err != nil {
			return fmt.Errorf("starting %s metadata informer: %w", gvk.Kind, err)
		}
	}
	// Profiles and policies, and the bounds of a sized pod (LimitRanges, quotas, nodes).
	for _, obj := range []client.Object{&ballastv1.WorkloadProfile{}, &ballastv1.ClusterResourcePolicy{}, &ballastv1.ResourcePolicy{},
		&corev1.LimitRange{}, &corev1.ResourceQuota{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	nodes, err := mgr.GetCache().GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return err
	}
	if err := h.Bounds().Watch(nodes); err != nil {
		return err
	}
	return nil
}
