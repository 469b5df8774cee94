package certs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Options configure the built-in certificate authority.
type Options struct {
	Namespace  string   // where the Secret lives (the operator namespace)
	SecretName string   // <fullname>-webhook-cert
	Webhook    string   // MutatingWebhookConfiguration to keep the caBundle of; "" = none
	Hosts      []string // serving certificate DNS names / IPs, e.g. <svc>.<ns>.svc
	CertDir    string   // webhook server certificate folder (tls.crt, tls.key)
	Lifetimes  Lifetimes
	// Every is how often a replica re-checks the Secret (rotation, another replica's write).
	Every time.Duration
	Now   func() time.Time
}

// Manager keeps the Secret, the certificate files and the caBundle in sync. It uses an
// uncached client: it reads one Secret once a minute, which a cluster-wide Secret
// informer would cost far more than.
type Manager struct {
	c    client.Client
	opts Options
}

// New returns a Manager; c must be a live (uncached) client.
func New(c client.Client, opts Options) *Manager {
	if opts.Lifetimes == (Lifetimes{}) {
		opts.Lifetimes = DefaultLifetimes
	}
	if opts.Every == 0 {
		opts.Every = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Manager{c: c, opts: opts}
}

// NeedLeaderElection is false: every replica serves the webhook and needs the files.
func (m *Manager) NeedLeaderElection() bool { return false }

// Start re-checks every Options.Every until ctx ends; errors are logged and retried.
func (m *Manager) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("webhook-certs")
	t := time.NewTicker(m.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := m.Ensure(ctx); err != nil {
				log.Error(err, "keeping webhook certificates")
			}
		}
	}
}

// Ensure runs one pass: create or renew the Secret as needed (optimistic concurrency, so
// replicas racing converge on one winner), write the files, sync the caBundle.
func (m *Manager) Ensure(ctx context.Context) error { return m.ensure(ctx, false) }

// Rotate forces a new serving certificate now (same CA).
func (m *Manager) Rotate(ctx context.Context) error { return m.ensure(ctx, true) }

func (m *Manager) ensure(ctx context.Context, force bool) error {
	for attempt := 0; ; attempt++ {
		b, err := m.sync(ctx, force)
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			if attempt < 5 {
				continue // another replica wrote first: take its certificates
			}
		}
		if err != nil {
			return err
		}
		if err := m.writeFiles(b); err != nil {
			return err
		}
		return m.syncWebhook(ctx, b.CABundle)
	}
}

func (m *Manager) sync(ctx context.Context, force bool) (Bundle, error) {
	log := logf.FromContext(ctx).WithName("webhook-certs")
	key := client.ObjectKey{Namespace: m.opts.Namespace, Name: m.opts.SecretName}
	s := &corev1.Secret{}
	err := m.c.Get(ctx, key, s)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return Bundle{}, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	cur := bundleFrom(s.Data)
	if force {
		cur.TLSCert = nil
	}
	next, changed, err := Plan(cur, m.opts.Now(), m.opts.Lifetimes, m.opts.Hosts)
	if err != nil {
		return Bundle{}, fmt.Errorf("issuing webhook certificates: %w", err)
	}
	if !changed {
		return cur, nil
	}
	if !exists {
		// The chart creates the Secret empty and grants no create on Secrets; a Secret that
		// is missing is created only where the caller's RBAC allows it (outside the chart).
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "ballast"}},
			Type: corev1.SecretTypeTLS,
			Data: next.data(),
		}
		if err := m.c.Create(ctx, s); err != nil {
			if apierrors.IsForbidden(err) {
				return Bundle{}, fmt.Errorf("webhook Secret %s is missing and may not be created (the chart creates it in builtin certificate mode): %w", key, err)
			}
			return Bundle{}, fmt.Errorf("creating Secret %s: %w", key, err)
		}
		log.Info("created webhook certificates", "secret", key.String())
		return next, nil
	}
	first := len(cur.CACert) == 0 // the chart's empty Secret: the first issue
	s.Data = next.data()
	if err := m.c.Update(ctx, s); err != nil { // resourceVersion precondition: conflicts retry
		return Bundle{}, fmt.Errorf("updating Secret %s: %w", key, err)
	}
	if first {
		log.Info("created webhook certificates", "secret", key.String())
		return next, nil
	}
	log.Info("renewed webhook certificates", "secret", key.String())
	return next, nil
}

// writeFiles writes tls.crt and tls.key atomically when they differ from the files on disk.
func (m *Manager) writeFiles(b Bundle) error {
	if m.opts.CertDir == "" {
		return nil
	}
	if err := os.MkdirAll(m.opts.CertDir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{KeyTLSKey: b.TLSKey, KeyTLSCert: b.TLSCert} {
		p := filepath.Join(m.opts.CertDir, name)
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, data) {
			continue
		}
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
		if err := os.Rename(tmp, p); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return nil
}

// syncWebhook sets caBundle on every webhook of the mutating configuration, and of the
// validating one of the same name, when it differs.
func (m *Manager) syncWebhook(ctx context.Context, bundle []byte) error {
	if m.opts.Webhook == "" {
		return nil
	}
	if err := m.syncMutating(ctx, bundle); err != nil {
		return err
	}
	return m.syncValidating(ctx, bundle)
}

func (m *Manager) syncMutating(ctx context.Context, bundle []byte) error {
	w := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := m.c.Get(ctx, client.ObjectKey{Name: m.opts.Webhook}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // not installed yet (or installed without it): nothing to keep in sync
		}
		return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", m.opts.Webhook, err)
	}
	patch := client.MergeFromWithOptions(w.DeepCopy(), client.MergeFromWithOptimisticLock{})
	changed := false
	for i := range w.Webhooks {
		if !bytes.Equal(w.Webhooks[i].ClientConfig.CABundle, bundle) {
			w.Webhooks[i].ClientConfig.CABundle = bundle
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := m.c.Patch(ctx, w, patch); err != nil {
		return fmt.Errorf("patching caBundle of %s: %w", m.opts.Webhook, err)
	}
	logf.FromContext(ctx).WithName("webhook-certs").Info("updated webhook caBundle", "webhook", m.opts.Webhook)
	return nil
}

// syncValidating does the same for the ValidatingWebhookConfiguration of the same name
// (Understudy's eviction webhook), when it exists.
func (m *Manager) syncValidating(ctx context.Context, bundle []byte) error {
	w := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := m.c.Get(ctx, client.ObjectKey{Name: m.opts.Webhook}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", m.opts.Webhook, err)
	}
	patch := client.MergeFromWithOptions(w.DeepCopy(), client.MergeFromWithOptimisticLock{})
	changed := false
	for i := range w.Webhooks {
		if !bytes.Equal(w.Webhooks[i].ClientConfig.CABundle, bundle) {
			w.Webhooks[i].ClientConfig.CABundle = bundle
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := m.c.Patch(ctx, w, patch); err != nil {
		return fmt.Errorf("patching caBundle of ValidatingWebhookConfiguration %s: %w", m.opts.Webhook, err)
	}
	logf.FromContext(ctx).WithName("webhook-certs").Info("updated webhook caBundle", "validatingWebhook", m.opts.Webhook)
	return nil
}
