package config

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/logging"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// Controller keeps State in sync with BallastConfig "ballast" and the kill-switch ConfigMap.
// Both objects are singletons, so Reconcile takes no request.
type Controller struct {
	clock     clock.PassiveClock
	client    client.Client
	state     *State
	metrics   *Metrics
	namespace string
	log       logr.Logger
	// warned are the configuration problems already logged, so each is logged once per change.
	warned map[string]string
}

// New returns the config controller for the operator namespace; log is its logger.
func New(clk clock.PassiveClock, c client.Client, state *State, m *Metrics, operatorNamespace string, log logr.Logger) *Controller {
	return &Controller{clock: clk, client: c, state: state, metrics: m, namespace: operatorNamespace,
		log: log.WithValues("controller", "config"), warned: map[string]string{}}
}

// Register adds the controller to mgr. It runs on every replica (no leader election).
func (c *Controller) Register(mgr ctrl.Manager) error {
	only := func(name, ns string) predicate.Predicate {
		return predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == name && o.GetNamespace() == ns
		})
	}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("config").
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 1}).
		Watches(&ballastv1.BallastConfig{}, one, builder.WithPredicates(only(ballastv1.BallastConfigName, ""))).
		Watches(&corev1.ConfigMap{}, one, builder.WithPredicates(only(ballastv1.KillSwitchConfigMap, c.namespace))).
		Complete(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, c.Reconcile(ctx)
		}))
}

// Reconcile re-reads both objects and publishes the new snapshot.
func (c *Controller) Reconcile(ctx context.Context) error {
	var spec *ballastv1.BallastConfigSpec
	cfg := &ballastv1.BallastConfig{}
	switch err := c.client.Get(ctx, client.ObjectKey{Name: ballastv1.BallastConfigName}, cfg); {
	case err == nil:
		spec = cfg.Spec.DeepCopy()
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading BallastConfig: %w", err)
	}
	cm := &corev1.ConfigMap{}
	configMap := false
	switch err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: ballastv1.KillSwitchConfigMap}, cm); {
	case err == nil:
		configMap = cm.DeletionTimestamp.IsZero()
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading kill-switch ConfigMap: %w", err)
	}
	old, next, changed := c.state.update(spec, configMap)
	c.checkConfig(spec)
	c.log.V(1).Info("config checked", "present", spec != nil, "resourceVersion", cfg.ResourceVersion, "kill_switch", next.Active())
	if !changed {
		return nil
	}
	if old.KillSwitch != next.KillSwitch {
		c.transition(old, next)
	}
	if !sameConfig(old.Config, next.Config) {
		c.log.Info("BallastConfig changed", "present", next.Config != nil, "identityLabels", next.IdentityLabels())
	}
	return nil
}

// transition logs and counts a kill-switch change (SPEC §10.2).
func (c *Controller) transition(old, next Snapshot) {
	if old.KillSwitch != "" {
		c.metrics.Active.WithLabelValues(old.KillSwitch).Set(0)
	}
	switch {
	case old.KillSwitch == "" && next.KillSwitch != "":
		c.metrics.Transitions.WithLabelValues("activated").Inc()
		c.log.Info("Kill switch activated", "kill_switch", true, "kill_switch_reason", next.KillSwitch)
	case old.KillSwitch != "" && next.KillSwitch == "":
		c.metrics.Transitions.WithLabelValues("deactivated").Inc()
		c.log.Info("Kill switch deactivated", "kill_switch", false)
	}
	if next.KillSwitch != "" {
		c.metrics.Active.WithLabelValues(next.KillSwitch).Set(1)
	}
}

// checkConfig logs each unusable BallastConfig value once per change of that value
// (SPEC §11.4): an unusable retentionWindow (168h is used) and an unparseable orphanTTL
// (profiles are not deleted by TTL).
func (c *Controller) checkConfig(spec *ballastv1.BallastConfigSpec) {
	retention, ttl := "", ""
	if spec != nil {
		if _, ok := ballastv1.RetentionWindow(*spec); !ok {
			retention = spec.RetentionWindow
		}
		if _, ok := ballastv1.OrphanTTL(*spec); !ok {
			ttl = spec.OrphanTTL
		}
	}
	if c.once("retentionWindow", retention) {
		logging.Warn(c.log, "unusable retentionWindow in BallastConfig, using 168h", "retentionWindow", retention)
	}
	if c.once("orphanTTL", ttl) {
		c.log.Error(nil, "unparseable orphanTTL in BallastConfig: profiles will not be deleted by TTL", "orphanTTL", ttl)
	}
	_, problems := policy.FloorsOf(spec)
	if c.once("policyFloors", strings.Join(problems, "; ")) {
		logging.Warn(c.log, "unusable policyFloors in BallastConfig, using the defaults for those fields", "problems", problems)
	}
}

// once reports whether a problem (bad != "") with field is new since the last call; a
// fixed field is forgotten, so breaking it again reports again.
func (c *Controller) once(field, bad string) bool {
	if c.warned[field] == bad {
		return false
	}
	if bad == "" {
		delete(c.warned, field)
		return false
	}
	c.warned[field] = bad
	return true
}
