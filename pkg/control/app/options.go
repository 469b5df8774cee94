// Package app wires ballast-control: options and flags, the manager, and subcommands.
package app

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/backfill"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/profiles"
	"github.com/ballastk8s/ballast/pkg/control/resize"
	"github.com/ballastk8s/ballast/pkg/control/understudy"
	"github.com/ballastk8s/ballast/pkg/logging"
	"github.com/ballastk8s/ballast/pkg/savings"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Options are ballast-control's settings (SPEC §12.2). Flags fall back to environment
// variables the chart sets.
type Options struct {
	MetricsBindAddress     string
	MetricsSecure          bool
	HealthProbeBindAddress string
	LeaderElect            bool
	WebhookCertPath        string
	WebhookCertName        string
	WebhookCertKey         string
	EnableHTTP2            bool
	WebhookPort            int
	WebhookHost            string
	WebhookCertMode        string
	WebhookSecretName      string
	WebhookConfigName      string
	WebhookDNSNames        string
	// WebhookClientCA is a PEM CA bundle file; when set the webhook server requires and
	// verifies a client certificate signed by it (the API server's admission client).
	WebhookClientCA   string
	OperatorNamespace string
	RedisURL          string
	// Store holds the store credentials and TLS settings (the password from a file or
	// env BALLAST_STORE_PASSWORD, never a flag); its URL is RedisURL.
	Store             store.Config
	DryRun            string
	LogLevel          string
	LogFormat         string
	LogLevelWebhook   string
	LogLevelWatcher   string
	LogLevelCollector string
	LogLevelAdjuster  string
	LogStdout         bool
	LogStdoutFields   string
	// Understudy runs the Understudy controller and eviction webhook (SPEC §15); its extra
	// doom taint keys are comma-separated (§15.3).
	Understudy                                        bool
	UnderstudyDoomTaints, UnderstudyInvoluntaryTaints string
	// UnderstudyMaxHold clamps every Understudy hold (readinessDeadlineSeconds).
	UnderstudyMaxHold time.Duration
	// PredictedRequests publishes autoscaling.k8s.io/predicted-pod-requests on owners.
	PredictedRequests bool
	// HPAScaleTarget lets behaviors.hpa: scale-target patch HorizontalPodAutoscalers (chart
	// value hpa.scaleTarget, which also grants the patch); off, scale-target preserves.
	HPAScaleTarget bool
	// PressureRaiseThreshold (percent of the time stalled on memory, 0 = off) and
	// PressureRaiseSustain: a resize-mode container above the one for the other is raised
	// in place at once (ARCHITECTURE.md "Fast raises").
	PressureRaiseThreshold float64
	PressureRaiseSustain   time.Duration
	// Fallback measures enrolled pods on nodes without a live node agent through
	// metrics.k8s.io, polled every FallbackInterval.
	Fallback         bool
	FallbackInterval time.Duration
	// StatusRefreshInterval is how often, at most, a WorkloadProfile whose usage statistics
	// alone moved is written; acted-on changes are written at once (profiles.ShouldWriteStatus).
	// 0 writes every material change.
	StatusRefreshInterval time.Duration
	// StoreCapacityInterval is how often the store's memory is read (ballast_store_used_bytes,
	// the StoreFull condition of profiles).
	StoreCapacityInterval time.Duration
	// FallbackEphemeralStorage reads those pods' ephemeral storage from the kubelet Summary
	// API through the API server's node proxy (get on nodes/proxy).
	FallbackEphemeralStorage bool
	// HistoryPrometheusURL, when set, gives each new WorkloadProfile day-0 history: the
	// cAdvisor usage of its pods read once from this Prometheus HTTP API (pkg/control/backfill),
	// each backfill bounded by HistoryPrometheusTimeout.
	HistoryPrometheusURL     string
	HistoryPrometheusTimeout time.Duration
	// HistoryPrometheusStep is the resolution asked of Prometheus (one sample per container
	// and resource per step); HistoryPrometheusRateWindow the cpu rate()'s range, which must
	// hold at least two of that Prometheus' scrapes.
	HistoryPrometheusStep, HistoryPrometheusRateWindow time.Duration

	// ProfileWorkers is how many WorkloadProfiles the profiles controller reconciles at
	// once; EnrollmentWorkers how many pods the enrollment controller reconciles at once.
	ProfileWorkers, EnrollmentWorkers int
	// Profiling serves Go's pprof endpoints on the metrics endpoint.
	Profiling bool
	// PriceCPUHour and PriceGiBHour price a requested cpu core and GiB of memory for an hour,
	// HoursPerMonth the month (0: 730): ballast_profile_monthly_savings (pkg/savings).
	PriceCPUHour, PriceGiBHour, HoursPerMonth float64

	// SkipControllerNameValidation lets one process run several managers (tests); no flag.
	SkipControllerNameValidation bool
}

// NewOptions returns the documented defaults.
func NewOptions() *Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = ballastv1.DefaultOperatorNamespace
	}
	redis := os.Getenv("REDIS_URL")
	if redis == "" {
		redis = "redis://localhost:6379"
	}
	return &Options{
		MetricsBindAddress:          "0",
		MetricsSecure:               true,
		HealthProbeBindAddress:      ":8081",
		LeaderElect:                 true,
		Understudy:                  true,
		UnderstudyMaxHold:           understudy.DefaultMaxHold,
		Fallback:                    true,
		FallbackInterval:            30 * time.Second,
		HistoryPrometheusTimeout:    30 * time.Second,
		HistoryPrometheusStep:       time.Minute,
		HistoryPrometheusRateWindow: 5 * time.Minute,
		WebhookCertName:             "tls.crt",
		WebhookCertKey:              "tls.key",
		WebhookPort:                 ballastv1.WebhookPort,
		WebhookCertMode:             "builtin",
		WebhookSecretName:           "ballast-webhook-cert",
		WebhookConfigName:           "ballast",
		OperatorNamespace:           ns,
		RedisURL:                    redis,
		Store:                       store.ConfigFromEnv(""),
		DryRun:                      "none",
		LogLevel:                    "info",
		LogFormat:                   "json",
		LogStdout:                   true,
		PressureRaiseThreshold:      100 * resize.DefaultPressureThreshold,
		PressureRaiseSustain:        resize.DefaultPressureSustain,
		StatusRefreshInterval:       profiles.DefaultStatusRefresh,
		StoreCapacityInterval:       profiles.DefaultStoreCapacityInterval,
		ProfileWorkers:              profiles.DefaultWorkers,
		EnrollmentWorkers:           enrollment.DefaultWorkers,
	}
}

// AddFlags registers every option on fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, `address of the metrics endpoint ("0" disables it)`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "serve metrics over HTTPS with authn/authz")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "address of /healthz and /readyz")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "run controllers on the elected leader only")
	fs.StringVar(&o.WebhookCertPath, "webhook-cert-path", o.WebhookCertPath, "folder holding the webhook serving certificate")
	fs.StringVar(&o.WebhookCertName, "webhook-cert-name", o.WebhookCertName, "certificate file name in --webhook-cert-path")
	fs.StringVar(&o.WebhookCertKey, "webhook-cert-key", o.WebhookCertKey, "key file name in --webhook-cert-path")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "webhook server port")
	fs.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "webhook server bind address (default all)")
	fs.StringVar(&o.WebhookCertMode, "webhook-cert-mode", o.WebhookCertMode, "builtin (Ballast keeps a CA and certificate in a Secret) or files (mounted, e.g. by cert-manager; reloaded on change)")
	fs.StringVar(&o.WebhookSecretName, "webhook-secret-name", o.WebhookSecretName, "builtin mode: Secret holding the CA and serving certificate")
	fs.StringVar(&o.WebhookConfigName, "webhook-config-name", o.WebhookConfigName, "builtin mode: MutatingWebhookConfiguration whose caBundle is kept in sync")
	fs.StringVar(&o.WebhookDNSNames, "webhook-dns-names", o.WebhookDNSNames, "builtin mode: comma-separated serving certificate names/IPs (default <secret's service>.<ns>.svc forms)")
	fs.StringVar(&o.WebhookClientCA, "webhook-client-ca", o.WebhookClientCA, "PEM CA bundle file: when set, the webhook server requires a client certificate signed by it (configure the API server's admission client certificate to match; read at start)")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "serve HTTP/2 on the webhook and metrics endpoints")
	fs.StringVar(&o.OperatorNamespace, "operator-namespace", o.OperatorNamespace, "namespace of the kill-switch ConfigMap and leases (env POD_NAMESPACE)")
	fs.StringVar(&o.RedisURL, "redis-url", o.RedisURL, "store URL, redis:// or rediss:// (env REDIS_URL); give the password with --store-password-file")
	o.Store.AddFlags(fs)
	fs.StringVar(&o.DryRun, "dry-run", o.DryRun, "none|apply|resize|all")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "debug|info|warn|error")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "json|text")
	fs.StringVar(&o.LogLevelWebhook, "log-level-webhook", o.LogLevelWebhook, "log level of the admission webhook (default --log-level)")
	fs.StringVar(&o.LogLevelWatcher, "log-level-watcher", o.LogLevelWatcher, "log level of enrollment (default --log-level)")
	fs.StringVar(&o.LogLevelCollector, "log-level-collector", o.LogLevelCollector, "log level of profile statistics (default --log-level)")
	fs.StringVar(&o.LogLevelAdjuster, "log-level-adjuster", o.LogLevelAdjuster, "log level of resize (default --log-level)")
	fs.BoolVar(&o.HPAScaleTarget, "hpa-scale-target", o.HPAScaleTarget, "let policies with behaviors.hpa: scale-target patch the averageUtilization of HorizontalPodAutoscalers; needs patch on them")
	fs.BoolVar(&o.PredictedRequests, "predicted-requests-annotation", o.PredictedRequests, "publish autoscaling.k8s.io/predicted-pod-requests (Karpenter's in-place RFC) on the Deployments and StatefulSets of sized pods; needs get and patch on them")
	fs.Float64Var(&o.PressureRaiseThreshold, "pressure-raise-threshold", o.PressureRaiseThreshold, "percent of the time a resize-mode container may be stalled on memory (PSI, or eBPF reclaim stall on cgroup v1) before it is raised in place at once; 0 turns the pressure fast raise off")
	fs.DurationVar(&o.PressureRaiseSustain, "pressure-raise-sustain", o.PressureRaiseSustain, "how long the memory pressure must stay at or above --pressure-raise-threshold without a break")
	fs.DurationVar(&o.StatusRefreshInterval, "status-refresh-interval", o.StatusRefreshInterval, "how often, at most, a WorkloadProfile's status is written when only its usage statistics moved (and recommendations by no more than 1 %); state, counts, conditions and larger recommendation changes are written at once; 0 writes every change")
	fs.DurationVar(&o.StoreCapacityInterval, "store-capacity-interval", o.StoreCapacityInterval, "how often the store's memory is read (INFO memory and a no-op write; ballast_store_used_bytes, ballast_store_max_bytes and the profiles' StoreFull condition); the store user needs INFO")
	fs.BoolVar(&o.LogStdout, "log-stdout", o.LogStdout, "write logs (to stderr); false discards them")
	fs.BoolVar(&o.Fallback, "fallback", o.Fallback, "measure enrolled pods on nodes without a live node agent through metrics.k8s.io (needs metrics-server or another provider, and get/list on pods.metrics.k8s.io)")
	fs.DurationVar(&o.FallbackInterval, "fallback-interval", o.FallbackInterval, "how often metrics.k8s.io is read for pods on nodes without a live node agent (each reading is written once; the metrics API's own resolution bounds the sample rate)")
	fs.BoolVar(&o.FallbackEphemeralStorage, "fallback-ephemeral-storage", o.FallbackEphemeralStorage, "with --fallback, also read ephemeral storage of those pods from the kubelet Summary API through the node proxy (needs get on nodes/proxy)")
	fs.StringVar(&o.HistoryPrometheusURL, "history-prometheus-url", o.HistoryPrometheusURL, "Prometheus HTTP API (e.g. http://prometheus.monitoring:9090) from which a new WorkloadProfile is backfilled once with its pods' cAdvisor usage over the retention window (selected through kube-state-metrics' kube_pod_labels); empty: no backfill")
	fs.DurationVar(&o.HistoryPrometheusTimeout, "history-prometheus-timeout", o.HistoryPrometheusTimeout, "longest one profile's backfill from --history-prometheus-url may take (every query and the store write); past it the profile accrues without it")
	fs.DurationVar(&o.HistoryPrometheusStep, "history-prometheus-step", o.HistoryPrometheusStep, "resolution of the history read from --history-prometheus-url: one sample per container and resource per step (whole seconds, at least 1s)")
	fs.DurationVar(&o.HistoryPrometheusRateWindow, "history-prometheus-rate-window", o.HistoryPrometheusRateWindow, "range of the cpu rate() in the history query; must span at least two of that Prometheus' scrape intervals (whole seconds, at least the step)")
	fs.BoolVar(&o.Understudy, "understudy", o.Understudy, "run Understudy: the controller and the eviction webhook (needs its RBAC and CRD)")
	fs.StringVar(&o.UnderstudyDoomTaints, "understudy-doom-taints", o.UnderstudyDoomTaints, "extra taint keys announcing a voluntary node disruption (comma-separated)")
	fs.StringVar(&o.UnderstudyInvoluntaryTaints, "understudy-involuntary-taints", o.UnderstudyInvoluntaryTaints, "extra taint keys announcing an involuntary node disruption, e.g. a spot-interruption handler's (comma-separated; an RFC 3339 value is its deadline)")
	fs.DurationVar(&o.UnderstudyMaxHold, "understudy-max-hold", o.UnderstudyMaxHold, "longest an Understudy may hold an eviction, whatever its readinessDeadlineSeconds")
	fs.IntVar(&o.ProfileWorkers, "profile-workers", o.ProfileWorkers, "how many WorkloadProfiles are recomputed at once (each waits mostly on the store and the API server)")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "serve Go's profiling endpoints (/debug/pprof/) on the metrics endpoint, behind its authentication when --metrics-secure")
	fs.IntVar(&o.EnrollmentWorkers, "enrollment-workers", o.EnrollmentWorkers, "how many pods are bound to their profiles at once")
	fs.Float64Var(&o.PriceCPUHour, "price-cpu-hour", o.PriceCPUHour, "price of one requested cpu core for an hour, for ballast_profile_monthly_savings (0: no such series; the chart sets it from pricing.cpuCoreHour)")
	fs.Float64Var(&o.PriceGiBHour, "price-gib-hour", o.PriceGiBHour, "price of one requested GiB of memory for an hour, for ballast_profile_monthly_savings (the chart sets it from pricing.memoryGiBHour)")
	fs.Float64Var(&o.HoursPerMonth, "hours-per-month", o.HoursPerMonth, "hours in a priced month (0: 730)")
	fs.StringVar(&o.LogStdoutFields, "log-stdout-fields", o.LogStdoutFields, `JSON object of static fields added to every log line, e.g. {"cluster":"prod-eu"}`)
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	switch o.DryRun {
	case "none", "apply", "resize", "all":
	default:
		errs = append(errs, fmt.Errorf("--dry-run %q: must be one of none, apply, resize, all", o.DryRun))
	}
	for flag, v := range map[string]string{"log-level": o.LogLevel, "log-level-webhook": o.LogLevelWebhook,
		"log-level-watcher": o.LogLevelWatcher, "log-level-collector": o.LogLevelCollector, "log-level-adjuster": o.LogLevelAdjuster} {
		if !logging.ValidLevel(v) && (v != "" || flag == "log-level") {
			errs = append(errs, fmt.Errorf("--%s %q: must be one of debug, info, warn, error", flag, v))
		}
	}
	if _, err := o.staticFields(); err != nil {
		errs = append(errs, err)
	}
	if !logging.ValidFormat(o.LogFormat) {
		errs = append(errs, fmt.Errorf("--log-format %q: must be json or text", o.LogFormat))
	}
	if o.WebhookCertMode != "builtin" && o.WebhookCertMode != "files" {
		errs = append(errs, fmt.Errorf("--webhook-cert-mode %q: must be builtin or files", o.WebhookCertMode))
	}
	if o.OperatorNamespace == "" {
		errs = append(errs, errors.New("--operator-namespace must not be empty"))
	}
	if o.PressureRaiseThreshold != 0 {
		if err := o.pressure().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--pressure-raise-threshold %v / --pressure-raise-sustain %v: %w",
				o.PressureRaiseThreshold, o.PressureRaiseSustain, err))
		}
	}
	if o.StatusRefreshInterval < 0 {
		errs = append(errs, fmt.Errorf("--status-refresh-interval %v: must not be negative", o.StatusRefreshInterval))
	}
	for flag, v := range map[string]float64{"price-cpu-hour": o.PriceCPUHour, "price-gib-hour": o.PriceGiBHour, "hours-per-month": o.HoursPerMonth} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			errs = append(errs, fmt.Errorf("--%s %v: must be a number >= 0", flag, v))
		}
	}
	if o.ProfileWorkers < 1 {
		errs = append(errs, fmt.Errorf("--profile-workers %d: must be at least 1", o.ProfileWorkers))
	}
	if o.EnrollmentWorkers < 1 {
		errs = append(errs, fmt.Errorf("--enrollment-workers %d: must be at least 1", o.EnrollmentWorkers))
	}
	if o.UnderstudyMaxHold < time.Second {
		errs = append(errs, fmt.Errorf("--understudy-max-hold %v: must be at least 1s", o.UnderstudyMaxHold))
	}
	if o.FallbackInterval < time.Second {
		errs = append(errs, fmt.Errorf("--fallback-interval %v: must be at least 1s", o.FallbackInterval))
	}
	if o.HistoryPrometheusURL != "" {
		if _, err := backfill.NewPrometheus(o.HistoryPrometheusURL, o.HistoryPrometheusTimeout); err != nil {
			errs = append(errs, fmt.Errorf("--history-prometheus-url: %w", err))
		}
		if o.HistoryPrometheusTimeout < time.Second {
			errs = append(errs, fmt.Errorf("--history-prometheus-timeout %v: must be at least 1s", o.HistoryPrometheusTimeout))
		}
		if o.HistoryPrometheusStep < time.Second || o.HistoryPrometheusStep%time.Second != 0 {
			errs = append(errs, fmt.Errorf("--history-prometheus-step %v: must be whole seconds, at least 1s", o.HistoryPrometheusStep))
		}
		if o.HistoryPrometheusRateWindow < o.HistoryPrometheusStep || o.HistoryPrometheusRateWindow%time.Second != 0 {
			errs = append(errs, fmt.Errorf("--history-prometheus-rate-window %v: must be whole seconds, at least the step (%v)", o.HistoryPrometheusRateWindow, o.HistoryPrometheusStep))
		}
	}
	if err := o.StoreConfig().ValidateFlags(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// prices are the prices of ballast_profile_monthly_savings.
func (o *Options) prices() savings.Prices {
	return savings.Prices{CPUCoreHour: o.PriceCPUHour, MemoryGiBHour: o.PriceGiBHour, HoursPerMonth: o.HoursPerMonth}
}

// pressure is the resize controller's pressure fast-raise setting.
func (o *Options) pressure() resize.PressureOptions {
	return resize.PressureOptions{Threshold: o.PressureRaiseThreshold / 100, Sustain: o.PressureRaiseSustain}
}

// StoreConfig is the store configuration: the URL of --redis-url with the store flags.
func (o *Options) StoreConfig() store.Config {
	c := o.Store
	c.URL = o.RedisURL
	return c
}
