package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/pprof"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/crds"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Scheme returns the scheme ballast-control works with.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := ballastv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// ApplyCRDs runs the apply-crds subcommand against cfg.
func ApplyCRDs(ctx context.Context, cfg *rest.Config) error {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ms, err := ballastv1.CRDs()
	if err != nil {
		return fmt.Errorf("reading embedded CRDs: %w", err)
	}
	return crds.Apply(ctx, dc, ms, ctrl.Log.WithName("apply-crds"))
}

// pprofHandlers are Go's profiling endpoints under /debug/pprof/ (--profiling), served by
// the metrics server behind its authentication and authorization when --metrics-secure.
func pprofHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// App is a built control plane: the manager and the controllers registered with it.
type App struct {
	Manager     ctrl.Manager
	Controllers *Controllers
}

// New builds the manager with health probes, metrics, the webhook server, leader election
// and every controller.
func New(ctx context.Context, o *Options, cfg *rest.Config) (ctrl.Manager, error) {
	a, err := NewApp(ctx, o, cfg, Deps{})
	if err != nil {
		return nil, err
	}
	return a.Manager, nil
}

// NewApp is New with some dependencies given (tests pass a clock, a metrics registry of
// their own, or a store) and the controllers returned; zero fields get the production
// defaults.
func NewApp(ctx context.Context, o *Options, cfg *rest.Config, deps Deps) (*App, error) {
	var tlsOpts []func(*tls.Config)
	if !o.EnableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: o.MetricsBindAddress, SecureServing: o.MetricsSecure, TLSOpts: tlsOpts}
	if o.MetricsSecure {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if o.Profiling {
		metricsOpts.ExtraHandlers = pprofHandlers()
	}
	clientCA, err := o.webhookClientAuth()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  Scheme(),
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        ballastv1.LeaderElectionID,
		LeaderElectionNamespace: o.OperatorNamespace,
		Cache:                   CacheOptions(o.OperatorNamespace),
		Controller:              ctrlconfig.Controller{SkipNameValidation: &o.SkipControllerNameValidation},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: o.WebhookHost, Port: o.WebhookPort, CertDir: o.certDir(),
			CertName: o.WebhookCertName, KeyName: o.WebhookCertKey, TLSOpts: append(clientCA, tlsOpts...),
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	ready := &readiness{cache: mgr.GetCache(), served: mgr.GetWebhookServer().StartedChecker()}
	if err := mgr.Add(ready); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", ready.Check); err != nil {
		return nil, err
	}
	if deps.Registry == nil {
		deps.Registry = ctrlmetrics.Registry
	}
	deps.kill = config.NewMetrics(deps.Registry)
	deps.shared = metrics.NewShared(deps.Registry)
	if deps.State == nil {
		deps.State = config.NewState(deps.kill)
	}
	if deps.Registry == nil {
		deps.Registry = ctrlmetrics.Registry
	}
	if deps.Store == nil {
		deps.Store = store.NewProfileReaderConfig(o.StoreConfig())
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Events == nil {
		deps.Events = events.New(mgr.GetEventRecorderFor(ballastv1.EventComponent)) //nolint:staticcheck // core v1 Events (SPEC §11.3)
	}
	deps.Resolver = resolve.New(mgr.GetCache()).WithLogger(deps.log(ComponentWebhook).WithName("resolve")).
		WithFloors(func() policy.Floors { return deps.State.Get().PolicyFloors() })
	ctrl.Log.Info("starting ballast-control", "dry_run", o.DryRun, "operatorNamespace", o.OperatorNamespace,
		"leaderElect", o.LeaderElect, "webhookCertMode", o.WebhookCertMode)
	cs, err := Register(ctx, mgr, o, deps)
	if err != nil {
		return nil, err
	}
	if err := setupWebhook(ctx, mgr, cfg, o, deps, cs.HPA); err != nil {
		return nil, err
	}
	return &App{Manager: mgr, Controllers: cs}, nil
}
