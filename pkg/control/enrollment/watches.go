package enrollment

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/reconciler"
)

func mergePatch(v any) client.Patch {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return client.RawPatch(types.MergePatchType, b)
}

// Register sets up the triggers of SPEC §6.7: the pod itself; BallastConfig creation or an
// identityLabels change (every pod); policy creation, deletion, or a change of selector,
// priority or validity (generation or status); a deleted profile (its pods). The manager's
// resync covers the "at least every 10 hours".
func (c *Controller) Register(mgr ctrl.Manager) error {
	configChanged := make(chan event.GenericEvent, 1)
	c.state.OnChange(func(old, next config.Snapshot) {
		if next.Config == nil {
			return
		}
		if old.Config != nil && equalStrings(old.Config.IdentityLabels, next.Config.IdentityLabels) && old.KillSwitch == next.KillSwitch {
			return
		}
		select { // coalesce: one pending "everything" event is enough
		case configChanged <- event.GenericEvent{Object: &corev1.Pod{}}:
		default:
		}
	})
	all := handler.EnqueueRequestsFromMapFunc(c.allPods)
	policyChange := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return validity(e.ObjectOld) != validity(e.ObjectNew) },
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("enrollment").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, c.workers)}).
		For(&corev1.Pod{}).
		WatchesRawSource(source.Channel(configChanged, all)).
		Watches(&ballastv1.ClusterResourcePolicy{}, all, builder.WithPredicates(policyChange)).
		Watches(&ballastv1.ResourcePolicy{}, handler.EnqueueRequestsFromMapFunc(c.namespacePods), builder.WithPredicates(policyChange)).
		Watches(&ballastv1.WorkloadProfile{}, handler.EnqueueRequestsFromMapFunc(c.profilePods),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc: func(event.CreateEvent) bool { return false },
				UpdateFunc: func(e event.UpdateEvent) bool {
					return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
				},
				DeleteFunc:  func(event.DeleteEvent) bool { return true },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		Complete(reconciler.For(mgr.GetClient(), func() *corev1.Pod { return &corev1.Pod{} }, reconciler.Object[*corev1.Pod](c)))
}

func validity(o client.Object) string {
	switch p := o.(type) {
	case *ballastv1.ClusterResourcePolicy:
		return condStatus(p.Status.Conditions)
	case *ballastv1.ResourcePolicy:
		return condStatus(p.Status.Conditions)
	}
	return ""
}

func (c *Controller) list(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	pods := &corev1.PodList{}
	// Only the names are read: no copy of every enrolled pod per policy or config change.
	if err := c.client.List(ctx, pods, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(pods.Items))
	for i := range pods.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
	}
	return out
}

func (c *Controller) allPods(ctx context.Context, _ client.Object) []reconcile.Request {
	return c.list(ctx)
}

func (c *Controller) namespacePods(ctx context.Context, o client.Object) []reconcile.Request {
	return c.list(ctx, client.InNamespace(o.GetNamespace()))
}

// ProfileRefIndex is the cache field index of pods by their profile-ref annotation.
const ProfileRefIndex = "ballast.profileRef"

// ModeIndex is the cache field index of pods by their mode label's value.
const ModeIndex = "ballast.mode"

func (c *Controller) profilePods(ctx context.Context, o client.Object) []reconcile.Request {
	return c.list(ctx, client.MatchingFields{ProfileRefIndex: o.GetName()})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func condStatus(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, ballastv1.ConditionValid); c != nil {
		return string(c.Status)
	}
	return ""
}
