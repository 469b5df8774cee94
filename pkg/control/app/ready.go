package app

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// errNotSynced is /readyz's answer before the informer caches have synced.
var errNotSynced = errors.New("informer caches not synced yet")

// readiness is /readyz: ready once every informer the manager started (the webhook's
// policies, profiles, owners, LimitRanges, quotas and nodes among them) has synced and
// the webhook server answers TLS handshakes. Until then a Service does not route
// admission requests to this replica, so it never answers from an empty cache.
type readiness struct {
	cache  cache.Cache
	served healthz.Checker // the webhook server's StartedChecker
	synced atomic.Bool
}

// Start waits for the caches to sync and records it; it runs on every replica.
func (r *readiness) Start(ctx context.Context) error {
	if r.cache.WaitForCacheSync(ctx) {
		r.synced.Store(true)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: a standby replica serves the webhook too.
func (r *readiness) NeedLeaderElection() bool { return false }

// Check implements healthz.Checker.
func (r *readiness) Check(req *http.Request) error {
	if !r.synced.Load() {
		return errNotSynced
	}
	return r.served(req)
}
