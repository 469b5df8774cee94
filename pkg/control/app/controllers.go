package app

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/control/policies"
	"github.com/ballastk8s/ballast/pkg/control/profiles"
	"github.com/ballastk8s/ballast/pkg/control/resize"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
)

// CacheOptions restrict the manager's informers to what Ballast reads: enrolled pods only
// (label present, any value), and the one kill-switch ConfigMap of the operator namespace.
func CacheOptions(operatorNamespace string) cache.Options {
	hasMode, err := labels.NewRequirement(ballastv1.ModeLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key always parses
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*hasMode)},
		&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{operatorNamespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", ballastv1.KillSwitchConfigMap),
		},
	}}
}

// Deps are the shared parts every controller and the webhook receive.
type Deps struct {
	State    *config.State
	Metrics  *metrics.Metrics
	Resolver *resolve.Resolver
	Store    profiles.Store
	// Now is the clock of time-dependent controllers (time.Now in production).
	Now func() time.Time
	// Logs are the per-component loggers (SetupLogging); missing ones derive from ctrl.Log.
	Logs map[string]logr.Logger
	// Registry receives the instruments of controllers that own theirs (resize);
	// controller-runtime's registry when nil.
	Registry prometheus.Registerer
}

// log returns a component's logger.
func (d Deps) log(component string) logr.Logger {
	if l, ok := d.Logs[component]; ok {
		return l
	}
	return ctrl.Log.WithName(component)
}

// Register lists every controller explicitly; there is no init-time registration.
func Register(ctx context.Context, mgr ctrl.Manager, o *Options, d Deps) error {
	if err := enrollment.IndexPods(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("indexing pods: %w", err)
	}
	regs := []interface{ Register(ctrl.Manager) error }{
		config.New(mgr.GetClient(), d.State, d.Metrics, o.OperatorNamespace),
		policies.NewCluster(mgr.GetClient(), d.Metrics),
		policies.NewNamespaced(mgr.GetClient(), d.Metrics),
		enrollment.New(mgr.GetClient(), mgr.GetAPIReader(), d.State, d.Resolver, d.Metrics).WithLogger(d.log(ComponentWatcher)),
		profiles.New(mgr.GetClient(), d.State, d.Resolver, d.Store, d.Metrics, d.Now).WithLogger(d.log(ComponentCollector)),
		resize.New(mgr.GetClient(), mgr.GetAPIReader(), d.State, d.Resolver,
			resize.NewMetrics(d.Registry, d.Metrics.Clamped, d.Metrics.KillSwitchSuppress),
			resize.NewEvents(mgr.GetEventRecorderFor(ballastv1.EventComponent)), //nolint:staticcheck // core v1 Events (SPEC §11.3)
			d.Now, resize.Options{DryRun: o.DryRun == "resize" || o.DryRun == "all", PredictedRequests: o.PredictedRequests}).
			WithLogger(d.log(ComponentAdjuster)).WithOOM(resize.NewStoreOOM(o.RedisURL), time.Second),
	}
	for _, r := range regs {
		if err := r.Register(mgr); err != nil {
			return fmt.Errorf("registering %T: %w", r, err)
		}
	}
	return nil
}
