// Package policies keeps the status of ClusterResourcePolicies and ResourcePolicies: the
// Valid condition (SPEC §3.3), the profile discriminator (§3.5) and the
// ballast_policies_invalid gauge. It runs on the leader.
package policies

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// Controller reconciles one policy kind.
type Controller struct {
	client  client.Client
	metrics *metrics.Metrics
	kind    string
	// invalid remembers the reason reported per policy, to clear the gauge when it changes.
	invalid map[types.NamespacedName]string
}

// NewCluster returns the controller for ClusterResourcePolicies.
func NewCluster(c client.Client, m *metrics.Metrics) *Controller {
	return &Controller{client: c, metrics: m, kind: ballastv1.KindClusterResourcePolicy, invalid: map[types.NamespacedName]string{}}
}

// NewNamespaced returns the controller for ResourcePolicies.
func NewNamespaced(c client.Client, m *metrics.Metrics) *Controller {
	return &Controller{client: c, metrics: m, kind: ballastv1.KindResourcePolicy, invalid: map[types.NamespacedName]string{}}
}

// Register adds the controller to mgr.
func (c *Controller) Register(mgr ctrl.Manager) error {
	var obj client.Object = &ballastv1.ClusterResourcePolicy{}
	name := "clusterresourcepolicy-status"
	if c.kind == ballastv1.KindResourcePolicy {
		obj, name = &ballastv1.ResourcePolicy{}, "resourcepolicy-status"
	}
	return ctrl.NewControllerManagedBy(mgr).Named(name).For(obj).Complete(c)
}

func (c *Controller) newObject() (client.Object, *ballastv1.ResourcePolicySpec, *ballastv1.ResourcePolicyStatus) {
	if c.kind == ballastv1.KindResourcePolicy {
		p := &ballastv1.ResourcePolicy{}
		return p, &p.Spec, &p.Status
	}
	p := &ballastv1.ClusterResourcePolicy{}
	return p, &p.Spec, &p.Status
}

// Reconcile validates the policy and patches its status when it differs.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	obj, spec, status := c.newObject()
	if err := c.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			c.setInvalid(req.NamespacedName, "")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	before := status.DeepCopy()
	status.ProfileDiscriminator = identity.Discriminator(c.kind, req.Namespace, req.Name)
	cond := metav1.Condition{Type: ballastv1.ConditionValid, Status: metav1.ConditionTrue,
		Reason: ballastv1.ReasonValid, Message: "policy is valid", ObservedGeneration: obj.GetGeneration()}
	if ok, reason, msg := policy.Validate(*spec); !ok {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reason, msg
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	if cond.Status == metav1.ConditionFalse {
		if c.setInvalid(req.NamespacedName, cond.Reason) || !equality.Semantic.DeepEqual(before, status) {
			// Once per generation (the status patch makes this reconcile's successor a no-op).
			log.Error(nil, "invalid policy: it is skipped until fixed", "policy", req.String(),
				"kind", c.kind, "reason", cond.Reason, "message", cond.Message, "generation", obj.GetGeneration())
		}
	} else {
		c.setInvalid(req.NamespacedName, "")
	}
	if equality.Semantic.DeepEqual(before, status) {
		return reconcile.Result{}, nil
	}
	patch := client.RawPatch(types.MergePatchType, mustStatusPatch(status))
	if err := c.client.Status().Patch(ctx, obj, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("patching status of %s %s: %w", c.kind, req, err)
	}
	return reconcile.Result{}, nil
}

// setInvalid keeps the gauge in step; it reports whether the reported reason changed.
func (c *Controller) setInvalid(key types.NamespacedName, reason string) bool {
	old := c.invalid[key]
	if old == reason {
		return false
	}
	if old != "" {
		c.metrics.PoliciesInvalid.DeleteLabelValues(c.kind, key.Namespace, key.Name, old)
		delete(c.invalid, key)
	}
	if reason != "" {
		c.metrics.PoliciesInvalid.WithLabelValues(c.kind, key.Namespace, key.Name, reason).Set(1)
		c.invalid[key] = reason
	}
	return true
}
