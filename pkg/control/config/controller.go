package config

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
)

// Controller keeps State in sync with BallastConfig "ballast" and the kill-switch ConfigMap.
type Controller struct {
	client    client.Client
	state     *State
	metrics   *metrics.Metrics
	namespace string
	lastWarn  string
}

// New returns the config controller for the operator namespace.
func New(c client.Client, state *State, m *metrics.Metrics, operatorNamespace string) *Controller {
	return &Controller{client: c, state: state, metrics: m, namespace: operatorNamespace}
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
		Complete(c)
}

// Reconcile re-reads both objects from the cache and publishes the new snapshot.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	var spec *ballastv1.BallastConfigSpec
	cfg := &ballastv1.BallastConfig{}
	switch err := c.client.Get(ctx, client.ObjectKey{Name: ballastv1.BallastConfigName}, cfg); {
	case err == nil:
		spec = cfg.Spec.DeepCopy()
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("reading BallastConfig: %w", err)
	}
	cm := &corev1.ConfigMap{}
	configMap := false
	switch err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: ballastv1.KillSwitchConfigMap}, cm); {
	case err == nil:
		configMap = cm.DeletionTimestamp.IsZero()
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("reading kill-switch ConfigMap: %w", err)
	}
	old, next, changed := c.state.update(spec, configMap)
	if spec != nil {
		if _, ok := ballastv1.RetentionWindow(*spec); !ok && c.lastWarn != spec.RetentionWindow {
			c.lastWarn = spec.RetentionWindow
			log.Info("warning: unusable retentionWindow, using 168h", "retentionWindow", spec.RetentionWindow)
		}
		if _, ok := ballastv1.OrphanTTL(*spec); !ok && changed {
			log.Error(nil, "unparseable orphanTTL: profiles will not be deleted by TTL", "orphanTTL", spec.OrphanTTL)
		}
	}
	if !changed {
		return reconcile.Result{}, nil
	}
	if old.KillSwitch != next.KillSwitch {
		if old.KillSwitch != "" {
			c.metrics.KillSwitchActive.WithLabelValues(old.KillSwitch).Set(0)
		}
		switch {
		case old.KillSwitch == "" && next.KillSwitch != "":
			c.metrics.KillSwitchChanges.WithLabelValues("activated").Inc()
			log.Info("Kill switch activated", "kill_switch", true, "kill_switch_reason", next.KillSwitch)
		case old.KillSwitch != "" && next.KillSwitch == "":
			c.metrics.KillSwitchChanges.WithLabelValues("deactivated").Inc()
			log.Info("Kill switch deactivated", "kill_switch", false)
		}
		if next.KillSwitch != "" {
			c.metrics.KillSwitchActive.WithLabelValues(next.KillSwitch).Set(1)
		}
	}
	if !sameConfig(old.Config, next.Config) {
		log.Info("BallastConfig changed", "present", next.Config != nil, "identityLabels", next.IdentityLabels())
	}
	return reconcile.Result{}, nil
}
