package policies

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/reconciler"
)

// Register adds the controller to mgr: the policies of its kind, every policy of the kind
// again when a MetricsSource, the retention window or the policy floors change (all are
// checked), and the
// policy governing a profile when that profile appears, goes or changes policy (the
// take-over report: a new profile under a policy is how pods moving to it show).
func (c *Controller) Register(mgr ctrl.Manager) error {
	name := "clusterresourcepolicy-status"
	if c.kind == ballastv1.KindResourcePolicy {
		name = "resourcepolicy-status"
	}
	all := handler.EnqueueRequestsFromMapFunc(c.all)
	cfgChanged := make(chan event.GenericEvent, 1)
	c.state.OnChange(func(old, next config.Snapshot) {
		if old.Config != nil && next.Config != nil && old.Config.RetentionWindow == next.Config.RetentionWindow &&
			old.Config.PolicyFloors == next.Config.PolicyFloors {
			return
		}
		select {
		case cfgChanged <- event.GenericEvent{Object: c.NewObject()}:
		default:
		}
	})
	return ctrl.NewControllerManagedBy(mgr).Named(name).
		For(c.NewObject()).
		Watches(&ballastv1.MetricsSource{}, all).
		Watches(&ballastv1.WorkloadProfile{}, c.governingSoon(), builder.WithPredicates(profileMoved())).
		WatchesRawSource(source.Channel(cfgChanged, all)).
		Complete(reconciler.For(mgr.GetClient(), c.NewObject, reconciler.Object[client.Object](c)))
}

func (c *Controller) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var keys []types.NamespacedName
	if c.kind == ballastv1.KindResourcePolicy {
		l := &ballastv1.ResourcePolicyList{}
		if err := c.client.List(ctx, l); err != nil {
			return nil
		}
		for i := range l.Items {
			keys = append(keys, client.ObjectKeyFromObject(&l.Items[i]))
		}
	} else {
		l := &ballastv1.ClusterResourcePolicyList{}
		if err := c.client.List(ctx, l); err != nil {
			return nil
		}
		for i := range l.Items {
			keys = append(keys, client.ObjectKeyFromObject(&l.Items[i]))
		}
	}
	out := make([]reconcile.Request, len(keys))
	for i, k := range keys {
		out[i] = reconcile.Request{NamespacedName: k}
	}
	return out
}

// governing enqueues the policy of this kind that governs a profile.
func (c *Controller) governing(_ context.Context, o client.Object) []reconcile.Request {
	wp, ok := o.(*ballastv1.WorkloadProfile)
	if !ok || wp.Status.PolicyRef == nil || wp.Status.PolicyRef.Kind != c.kind {
		return nil
	}
	r := wp.Status.PolicyRef
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: r.Name}}}
}

// takeOverCoalesce is how long a profile event waits before its policy is reconciled. Events
// that arrive meanwhile join it: a rollout that creates thousands of profiles costs one
// take-over pass (a list of every profile, and of the pods when one was accrued elsewhere)
// per interval, not one per profile.
const takeOverCoalesce = 3 * time.Second

// governingSoon enqueues, takeOverCoalesce later, the policy governing a profile (for an
// update, the old and the new one).
func (c *Controller) governingSoon() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	add := func(ctx context.Context, q queue, objs ...client.Object) {
		for _, o := range objs {
			for _, r := range c.governing(ctx, o) {
				q.AddAfter(r, takeOverCoalesce)
			}
		}
	}
	return handler.Funcs{
		CreateFunc:  func(ctx context.Context, e event.CreateEvent, q queue) { add(ctx, q, e.Object) },
		UpdateFunc:  func(ctx context.Context, e event.UpdateEvent, q queue) { add(ctx, q, e.ObjectOld, e.ObjectNew) },
		DeleteFunc:  func(ctx context.Context, e event.DeleteEvent, q queue) { add(ctx, q, e.Object) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { add(ctx, q, e.Object) },
	}
}

// profileMoved passes profile creations and deletions, and updates that change the
// governing policy; the frequent statistics updates do not pass.
func profileMoved() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*ballastv1.WorkloadProfile)
			n, ok2 := e.ObjectNew.(*ballastv1.WorkloadProfile)
			return ok1 && ok2 && refKey(o.Status.PolicyRef) != refKey(n.Status.PolicyRef)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
