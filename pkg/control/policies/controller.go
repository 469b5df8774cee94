// Package policies keeps the status of ClusterResourcePolicies and ResourcePolicies: the
// Valid condition (SPEC §3.3), the profile discriminator (§3.5) and the
// ballast_policies_invalid gauge, and reports policy problems once per change (§11.4):
// invalid values, metrics naming unknown MetricsSources, a minTimeSpan that can never be
// met, and profiles with history whose pods the policy takes over (ProfilesTakenOver).
// It runs on the leader.
package policies

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/logging"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// Controller reconciles one policy kind.
type Controller struct {
	clock    clock.PassiveClock
	client   client.Client
	state    *config.State
	metrics  *Metrics
	events   *events.Recorder
	log      logr.Logger
	kind     string
	problems problems
	// invalid remembers the reason reported per policy, to clear the gauge when it changes.
	invalid map[types.NamespacedName]string
	// resolver replays resolution for the take-over report (nil: no report).
	resolver *resolve.Resolver
}

// NewCluster returns the controller for ClusterResourcePolicies.
func NewCluster(clk clock.PassiveClock, c client.Client, state *config.State, m *Metrics, ev *events.Recorder, log logr.Logger) *Controller {
	return newController(clk, c, state, m, ev, log, ballastv1.KindClusterResourcePolicy)
}

// NewNamespaced returns the controller for ResourcePolicies.
func NewNamespaced(clk clock.PassiveClock, c client.Client, state *config.State, m *Metrics, ev *events.Recorder, log logr.Logger) *Controller {
	return newController(clk, c, state, m, ev, log, ballastv1.KindResourcePolicy)
}

func newController(clk clock.PassiveClock, c client.Client, state *config.State, m *Metrics, ev *events.Recorder, log logr.Logger, kind string) *Controller {
	return &Controller{clock: clk, client: c, state: state, metrics: m, events: ev, kind: kind,
		log: log.WithValues("controller", "policies", "kind", kind), invalid: map[types.NamespacedName]string{}}
}

// NewObject returns an empty object of the controller's kind.
func (c *Controller) NewObject() client.Object {
	if c.kind == ballastv1.KindResourcePolicy {
		return &ballastv1.ResourcePolicy{}
	}
	return &ballastv1.ClusterResourcePolicy{}
}

func parts(obj client.Object) (*ballastv1.ResourcePolicySpec, *ballastv1.ResourcePolicyStatus) {
	switch p := obj.(type) {
	case *ballastv1.ResourcePolicy:
		return &p.Spec, &p.Status
	case *ballastv1.ClusterResourcePolicy:
		return &p.Spec, &p.Status
	}
	panic(fmt.Sprintf("policies: unexpected object %T", obj))
}

// Gone clears the gauge and the reported problems of a deleted policy.
func (c *Controller) Gone(_ context.Context, key types.NamespacedName) (reconcile.Result, error) {
	c.setInvalid(key, "")
	c.problems.forget(key)
	c.metrics.TakenOver.DeleteLabelValues(c.kind, key.Namespace, key.Name)
	return reconcile.Result{}, nil
}

// Reconcile validates the policy, reports its problems once per change and patches its
// status when it differs.
func (c *Controller) Reconcile(ctx context.Context, obj client.Object) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(obj)
	spec, status := parts(obj)
	log := c.log.WithValues("policy", ballastv1.PolicyRefValue(key.Namespace, key.Name), "generation", obj.GetGeneration())
	before := status.DeepCopy()
	status.ProfileDiscriminator = identity.Discriminator(c.kind, key.Namespace, key.Name)
	status.Priority = spec.Priority
	cond := metav1.Condition{Type: ballastv1.ConditionValid, Status: metav1.ConditionTrue,
		Reason: ballastv1.ReasonValid, Message: "policy is valid", ObservedGeneration: obj.GetGeneration(),
		LastTransitionTime: metav1.NewTime(c.clock.Now())}
	known, err := c.knownSources(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if ok, reason, msg := policy.ValidateWithSources(c.kind, *spec, known, c.state.Get().PolicyFloors()); !ok {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reason, msg
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	if cond.Status == metav1.ConditionFalse {
		c.setInvalid(key, cond.Reason)
		if c.problems.changed(key, problemInvalid, fmt.Sprintf("%d %s: %s", obj.GetGeneration(), cond.Reason, cond.Message)) {
			log.Error(nil, "invalid policy: it is skipped until fixed", "reason", cond.Reason, "message", cond.Message)
			c.events.Publish(invalidEvent(obj, cond.Reason, cond.Message))
		}
	} else {
		c.setInvalid(key, "")
		c.problems.changed(key, problemInvalid, "")
	}
	var compiled *policy.Compiled
	if cond.Status == metav1.ConditionTrue {
		// The compiled policy carries the readiness values as every reader sees them: the
		// defaults for blank fields, raised to the floors.
		if compiled, err = policy.Compile(c.kind, key.Namespace, key.Name, obj.GetGeneration(), *spec,
			c.state.Get().PolicyFloors()); err != nil {
			log.Error(err, "compiling a valid policy; not checking its minTimeSpan")
		}
	}
	c.checkTimeSpan(log, obj, compiled)
	if cond.Status == metav1.ConditionTrue {
		t, err := c.findTakeOver(ctx, key)
		if err != nil {
			return reconcile.Result{}, err
		}
		c.reportTakeOver(log, obj, &status.Conditions, t)
	} else {
		meta.RemoveStatusCondition(&status.Conditions, ConditionProfilesTakenOver)
		c.metrics.TakenOver.DeleteLabelValues(c.kind, key.Namespace, key.Name)
		c.problems.changed(key, problemTakeOver, "")
	}
	log.V(1).Info("policy checked", "valid", cond.Status, "resourceVersion", obj.GetResourceVersion())
	if equality.Semantic.DeepEqual(before, status) {
		return reconcile.Result{}, nil
	}
	if err := c.client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, mustStatusPatch(status))); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("patching status of %s %s: %w", c.kind, key, err)
	}
	return reconcile.Result{}, nil
}

// knownSources lists the names of the MetricsSources of a known type. A policy naming any
// other source is Valid=False (UnknownMetricsSource) and resolves no pods: it would move
// them to new, empty profiles that can never fill (SPEC §3.3).
func (c *Controller) knownSources(ctx context.Context) (map[string]bool, error) {
	list := &ballastv1.MetricsSourceList{}
	if err := c.client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing MetricsSources: %w", err)
	}
	types := make(map[string]string, len(list.Items))
	for _, s := range list.Items {
		types[s.Name] = s.Spec.Type
	}
	return policy.KnownSources(types), nil
}

// checkTimeSpan warns once per change when a valid policy's minTimeSpan is longer than the
// retention window (SPEC §3.3: valid, but never ready). It reads the compiled policy (nil
// for an invalid one), never the written spec: a blank minTimeSpan is the 24h default and a
// ResourcePolicy's is raised to the cluster's floor, and either can exceed the retention.
func (c *Controller) checkTimeSpan(log logr.Logger, obj client.Object, compiled *policy.Compiled) {
	detail, span := "", ""
	retention := ballastv1.DefaultRetentionWindow
	if snap := c.state.Get(); snap.Config != nil {
		retention, _ = ballastv1.RetentionWindow(*snap.Config)
	}
	if compiled != nil && compiled.Readiness.MinTimeSpan > retention {
		span = compiled.Spec.Readiness.MinTimeSpan // as defaulted ("24h"), not as parsed ("24h0m0s")
		detail = span + " > " + retention.String()
	}
	if c.problems.changed(client.ObjectKeyFromObject(obj), problemNeverReady, detail) {
		logging.Warn(log, "readiness.minTimeSpan is longer than the retention window: profiles under this policy can never become ready",
			"minTimeSpan", span, "retentionWindow", retention.String())
		c.events.Publish(neverReadyEvent(obj, span, retention.String()))
	}
}

// setInvalid keeps the gauge in step with the reason reported per policy.
func (c *Controller) setInvalid(key types.NamespacedName, reason string) {
	old := c.invalid[key]
	if old == reason {
		return
	}
	if old != "" {
		c.metrics.Invalid.DeleteLabelValues(c.kind, key.Namespace, key.Name, old)
		delete(c.invalid, key)
	}
	if reason != "" {
		c.metrics.Invalid.WithLabelValues(c.kind, key.Namespace, key.Name, reason).Set(1)
		c.invalid[key] = reason
	}
}
