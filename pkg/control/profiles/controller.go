// Package profiles keeps WorkloadProfiles: counts of bound pods and workloads (SPEC §6.5,
// count.go), the Orphaned condition and orphan TTL (§6.6, orphan.go), the statistics,
// readiness and recommendations computed from the store (§4, §5, compute.go), and the
// purge of store data on deletion (finalize.go). It runs on the leader. Status is patched
// at once when something acted on changed, and at most once per --status-refresh-interval
// when only statistics moved (writes.go, ShouldWriteStatus).
package profiles

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/fallback"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/savings"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Series is one profile's history as read from the store.
type Series = store.ProfileSeries

// Store is what the controller needs from pkg/store (store.ProfileReader in production).
type Store interface {
	// Read returns the merged series of a profile hash at now.
	Read(ctx context.Context, hash string, now time.Time, retention time.Duration) (Series, error)
	// Purge deletes every key of a profile hash.
	Purge(ctx context.Context, hash string) error
}

// Controller reconciles WorkloadProfiles.
type Controller struct {
	clock    clock.PassiveClock
	client   client.Client
	state    *config.State
	resolver *resolve.Resolver
	store    Store
	metrics  *Metrics
	log      logr.Logger // the collector component's logger (SPEC §11.4)
	events   *events.Recorder
	// problems remembers the policy problems logged, so each is logged once per change.
	problems problemLog
	// retry is how soon a profile is recomputed after a store read failed.
	retry time.Duration
	// fallback is the metrics.k8s.io fallback's coverage view (nil: none).
	fallback fallback.View
	// refresh is --status-refresh-interval (ShouldWriteStatus); writes remembers the last
	// write of each profile.
	refresh time.Duration
	writes  lastWrites
	// workers is how many profiles are reconciled at once (at least 1).
	workers int
	// passes keeps one pass per profile at a time.
	passes keyedMutex
	// storeWatch says whether the store is full (storefull.go; nil: no StoreFull condition).
	storeWatch *StoreWatch
	// prices price ballast_profile_monthly_savings (savings.go).
	prices savings.Prices
	// backfill gives new profiles day-0 history from Prometheus (backfill.go; nil: off).
	backfill *backfillState
}

// DefaultWorkers is the profiles controller's default concurrency: a reconcile waits mostly
// on the store and the API server, and one worker cannot recompute 10,000 profiles within
// a one-minute sampling interval.
const DefaultWorkers = 8

// SetWorkers sets how many profiles are reconciled at once (before Register).
func (c *Controller) SetWorkers(n int) { c.workers = n }

// New returns the profiles controller; log is the collector component's logger.
func New(clk clock.PassiveClock, c client.Client, state *config.State, r *resolve.Resolver, s Store, m *Metrics, log logr.Logger) *Controller {
	return &Controller{clock: clk, client: c, state: state, resolver: r, store: s, metrics: m,
		log: log.WithValues("controller", "profiles"), retry: 15 * time.Second, workers: DefaultWorkers}
}

// Gone forgets the metrics of a profile that no longer exists.
func (c *Controller) Gone(_ context.Context, key types.NamespacedName) (reconcile.Result, error) {
	c.forget(key.Name)
	return reconcile.Result{}, nil
}

// Reconcile runs one pass over one profile: count its pods, keep Orphaned, delete it after
// the orphan TTL, compute statistics, and patch the status when it changed materially.
func (c *Controller) Reconcile(ctx context.Context, wp *ballastv1.WorkloadProfile) (reconcile.Result, error) {
	defer c.passes.lock(wp.Name)()
	ctx = logr.NewContext(ctx, c.log)
	if !wp.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, c.finalize(ctx, wp)
	}
	now := c.clock.Now()
	snap := c.state.Get()
	next := wp.Status.DeepCopy()

	pods, err := c.boundPods(ctx, wp.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.count(ctx, next, pods)
	setOrphaned(next, now)
	if snap.Config != nil {
		c.metrics.Info.Set(wp.Name, identity.ProfileAttributes(snap.Config.IdentityLabels, next.TupleLabels))
	}
	deleted, requeue, err := c.expire(ctx, wp, next, snap, now)
	if err != nil || deleted {
		return reconcile.Result{}, err
	}
	bfEvents := c.applyBackfill(ctx, wp, next, snap, now)
	interval, err := c.compute(ctx, wp, next, snap, now)
	if err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "computing profile statistics; keeping the last recommendations", "profile", wp.Name)
		interval = c.retry
	}
	c.applyStoreFull(next, wp.Generation)
	c.recordSavings(wp.Name, next, pods)
	if requeue == 0 || (interval > 0 && interval < requeue) {
		requeue = interval
	}
	// Computed before the patch, which overwrites wp with the stored result. A held status
	// publishes nothing: its events come with the write that carries them.
	evts := append(transitions(wp, next), bfEvents...)
	held, err := c.patchStatus(ctx, wp, next, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !held {
		c.events.Publish(evts...)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

func (c *Controller) forget(name string) {
	c.metrics.forget(name)
	c.writes.forget(name)
	c.forgetBackfill(name)
}

// clearState removes the profile's series of the ballast_profiles gauge (compute.go's
// helper before metrics.setState; kept for its callers).
func (c *Controller) clearState(name string) { c.metrics.clearState(name) }
