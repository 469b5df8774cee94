package app

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/backfill"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/fallback"
	"github.com/ballastk8s/ballast/pkg/control/hpa"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/control/podcache"
	"github.com/ballastk8s/ballast/pkg/control/policies"
	"github.com/ballastk8s/ballast/pkg/control/profiles"
	"github.com/ballastk8s/ballast/pkg/control/resize"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/control/understudy"
	"github.com/ballastk8s/ballast/pkg/store"
)

// CacheOptions restrict the manager's informers to what Ballast reads: enrolled pods only
// (label present, any value), and the one kill-switch ConfigMap of the operator namespace.
func CacheOptions(operatorNamespace string) cache.Options {
	hasMode, err := labels.NewRequirement(ballastv1.ModeLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key always parses
	}
	// Nothing in ballast-control reads managedFields; pods also keep only the fields the
	// controllers read (podcache.Slim), and profiles share the strings they repeat
	// (podcache.Profile), for the control plane's memory at 20,000 enrolled pods.
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:                {Label: labels.NewSelector().Add(*hasMode), Transform: podcache.Slim},
		&ballastv1.WorkloadProfile{}: {Transform: podcache.Profile},
		&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{operatorNamespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", ballastv1.KillSwitchConfigMap),
		},
	}}
}

// Deps are the shared parts every controller and the webhook receive. Zero fields get the
// production defaults in NewApp.
type Deps struct {
	State    *config.State
	Resolver *resolve.Resolver
	Store    profiles.Store
	// Clock is the clock of every controller (the real clock in production).
	Clock clock.PassiveClock
	// Registry receives every instrument (controller-runtime's registry in production).
	Registry prometheus.Registerer
	// Events publishes Kubernetes Events (the manager's recorder for component "ballast").
	Events *events.Recorder
	// Logs are the per-component loggers (SetupLogging); missing ones derive from ctrl.Log.
	Logs map[string]logr.Logger

	kill   *config.Metrics
	shared *metrics.Shared
}

// log returns a component's logger.
func (d Deps) log(component string) logr.Logger {
	if l, ok := d.Logs[component]; ok {
		return l
	}
	return ctrl.Log.WithName(component)
}

// Controllers are the control plane's controllers, as registered with the manager. Tests
// call their Reconcile methods directly.
type Controllers struct {
	Config     *config.Controller
	Cluster    *policies.Controller
	Namespaced *policies.Controller
	Enrollment *enrollment.Controller
	Profiles   *profiles.Controller
	Resize     *resize.Controller
	Understudy *understudy.Parts
	Fallback   *fallback.Controller
	// HPA patches HorizontalPodAutoscalers under behaviors.hpa: scale-target.
	HPA *hpa.Scaler
}

// Register lists every controller explicitly; there is no init-time registration.
func Register(ctx context.Context, mgr ctrl.Manager, o *Options, d Deps) (*Controllers, error) {
	if err := enrollment.IndexPods(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("indexing pods: %w", err)
	}
	c := mgr.GetClient()
	var err error
	pm := policies.NewMetrics(d.Registry)
	streams := resize.NewStoreOOMConfig(o.StoreConfig()) // OOM and pressure streams, one lazy connection
	cs := &Controllers{
		Config:     config.New(d.Clock, c, d.State, d.kill, o.OperatorNamespace, d.log(ComponentConfig)),
		Cluster:    policies.NewCluster(d.Clock, c, d.State, pm, d.Events, d.log(ComponentPolicies)),
		Namespaced: policies.NewNamespaced(d.Clock, c, d.State, pm, d.Events, d.log(ComponentPolicies)),
		Enrollment: enrollment.New(d.Clock, c, mgr.GetAPIReader(), d.State, d.Resolver, enrollment.NewMetrics(d.Registry), d.log(ComponentWatcher)),
		Profiles:   profiles.New(d.Clock, c, d.State, d.Resolver, d.Store, profiles.NewMetrics(d.Registry), d.log(ComponentCollector)),
	}
	if cs.Fallback, err = newFallback(mgr, o, d); err != nil {
		return nil, err
	}
	cs.Profiles.SetFallback(cs.Fallback)
	if o.HistoryPrometheusURL != "" {
		prom, err := backfill.NewPrometheus(o.HistoryPrometheusURL, o.HistoryPrometheusTimeout)
		if err != nil {
			return nil, err
		}
		// Its own store connection, like the fallback's.
		b := backfill.New(prom, store.NewProfileReaderConfig(o.StoreConfig()), backfill.Options{Step: o.HistoryPrometheusStep, RateWindow: o.HistoryPrometheusRateWindow})
		cs.Profiles.SetBackfill(b, backfill.NewMetrics(d.Registry), profiles.BackfillOptions{Timeout: o.HistoryPrometheusTimeout})
	}
	cs.Profiles.SetStatusRefresh(o.StatusRefreshInterval)
	cs.Profiles.SetWorkers(o.ProfileWorkers)
	cs.Profiles.SetPrices(o.prices())
	cs.Enrollment.SetWorkers(o.EnrollmentWorkers)
	cs.Profiles.SetEvents(d.Events)
	if src, ok := d.Store.(profiles.CapacitySource); ok {
		cs.Profiles.SetStoreWatch(profiles.NewStoreWatch(src, d.Clock, o.StoreCapacityInterval, d.Registry, d.log(ComponentCollector)))
	}
	cs.Cluster.SetResolver(d.Resolver)
	cs.Namespaced.SetResolver(d.Resolver)
	cs.Enrollment.SetEvents(d.Events)
	ro := resize.Options{DryRun: o.DryRun == "resize" || o.DryRun == "all", PredictedRequests: o.PredictedRequests,
		OOM: streams, OOMEvery: time.Second}
	if o.PressureRaiseThreshold > 0 {
		ro.Pressure, ro.PressureRaise = streams, o.pressure()
	}
	if o.Understudy {
		if cs.Understudy, err = understudy.Setup(ctx, mgr, d.Clock, d.State, d.Registry, d.Events, d.log(ComponentUnderstudy), o.understudy()); err != nil {
			return nil, fmt.Errorf("setting up understudy: %w", err)
		}
		// The Deferred ladder's rung 3 (SPEC §15.5): resize hands over, Understudy relocates
		// and reports the outcome back; neither package imports the other.
		ro.Relocator = cs.Understudy.Relocator
	}
	// behaviors.hpa: one lookup over the manager's cache for admission and resize, one scaler.
	scaler := hpa.NewScaler(c, mgr.GetAPIReader(), d.Events, d.log(ComponentWebhook).WithName("hpa"))
	if err := mgr.Add(scaler); err != nil {
		return nil, err
	}
	if _, err := mgr.GetCache().GetInformer(ctx, &autoscalingv2.HorizontalPodAutoscaler{}); err != nil {
		return nil, fmt.Errorf("starting horizontalpodautoscaler informer: %w", err)
	}
	cs.HPA = scaler
	cs.Resize = resize.New(d.Clock, c, mgr.GetAPIReader(), d.State, d.Resolver, resize.NewMetrics(d.Registry, d.shared.Clamped),
		d.Events, d.log(ComponentAdjuster), ro)
	cs.Resize.SetHPA(hpa.Lookup{Reader: mgr.GetCache(), ScaleTarget: o.HPAScaleTarget}, scaler)
	if cs.Understudy != nil {
		cs.Understudy.Relocator.SetRecorder(cs.Resize)
	}
	regs := []interface{ Register(ctrl.Manager) error }{cs.Config, cs.Cluster, cs.Namespaced, cs.Enrollment, cs.Profiles, cs.Resize, cs.Fallback}
	for _, r := range regs {
		if err := r.Register(mgr); err != nil {
			return nil, fmt.Errorf("registering %T: %w", r, err)
		}
	}
	return cs, nil
}

// newFallback builds the metrics.k8s.io fallback source (its own store connection). When
// turned off it still runs, to keep the agent coverage gauge and the profiles' AgentCoverage
// condition, but reads no metrics.
func newFallback(mgr ctrl.Manager, o *Options, d Deps) (*fallback.Controller, error) {
	api, err := fallback.NewMetricsAPI(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	fb := fallback.New(d.Clock, mgr.GetClient(), d.State, store.NewProfileReaderConfig(o.StoreConfig()), api,
		fallback.NewMetrics(d.Registry), d.Events, d.log(ComponentCollector).WithName("fallback"),
		fallback.Options{Enabled: o.Fallback, Interval: o.FallbackInterval, EphemeralStorage: o.FallbackEphemeralStorage}).
		WithPodLister(podcache.Lister(mgr.GetCache()))
	if o.FallbackEphemeralStorage {
		sum, err := fallback.NewSummaryAPI(mgr.GetConfig())
		if err != nil {
			return nil, err
		}
		fb.WithSummary(sum)
	}
	return fb, nil
}
