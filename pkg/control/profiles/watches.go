package profiles

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
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

// podProfiles enqueues the profiles named by a pod's profile-ref, before and after an
// update, so a pod moving between profiles recounts both, and a deleted pod recounts its
// profile from the stamped name (§6.4).
type podProfiles struct{}

func enqueueRef(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
	if o == nil {
		return
	}
	if ref := o.GetAnnotations()[ballastv1.ProfileRefAnnotation]; ref != "" {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: ref}})
	}
}

func (podProfiles) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueRef(q, e.Object)
}
func (podProfiles) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueRef(q, e.ObjectOld)
	enqueueRef(q, e.ObjectNew)
}
func (podProfiles) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueRef(q, e.Object)
}
func (podProfiles) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueRef(q, e.Object)
}

// Register wires the triggers: profiles themselves, bound pods, policies and sources (any
// change may change statistics or cadence), BallastConfig changes (retention, TTL), and the
// store becoming full or writable again (StoreFull).
func (c *Controller) Register(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(c.allProfiles)
	cfgChanged := make(chan event.GenericEvent, 1)
	c.state.OnChange(func(_, _ config.Snapshot) {
		select {
		case cfgChanged <- event.GenericEvent{Object: &ballastv1.WorkloadProfile{}}:
		default:
		}
	})
	b := ctrl.NewControllerManagedBy(mgr)
	if c.storeWatch != nil {
		if err := mgr.Add(c.storeWatch); err != nil {
			return err
		}
		b = b.WatchesRawSource(source.Channel(c.storeWatch.changed, all))
	}
	return b.
		Named("profiles").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, c.workers)}).
		For(&ballastv1.WorkloadProfile{}, builder.WithPredicates(notOwnStatus)).
		Watches(&corev1.Pod{}, podProfiles{}).
		Watches(&ballastv1.ClusterResourcePolicy{}, all).
		Watches(&ballastv1.ResourcePolicy{}, all).
		Watches(&ballastv1.MetricsSource{}, all).
		WatchesRawSource(source.Channel(cfgChanged, all)).
		Complete(reconciler.For(mgr.GetClient(), func() *ballastv1.WorkloadProfile { return &ballastv1.WorkloadProfile{} },
			reconciler.Object[*ballastv1.WorkloadProfile](c)))
}

// notOwnStatus drops the update events of a profile whose change is only this controller's
// own status write (everything but the identity fields the enrollment controller owns): the
// profile was just computed and is requeued at its sampling interval anyway. Without it,
// every status patch queued the profile again at once, and while agents keep flushing a
// busy controller recomputed every profile back to back instead of once per interval.
var notOwnStatus = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, okOld := e.ObjectOld.(*ballastv1.WorkloadProfile)
	n, okNew := e.ObjectNew.(*ballastv1.WorkloadProfile)
	if !okOld || !okNew {
		return true
	}
	return !ownStatusOnly(o, n)
}}

// ownStatusOnly reports whether old and next differ at most in the status fields the
// profiles controller writes (patch.go): same metadata that matters, same identity.
func ownStatusOnly(old, next *ballastv1.WorkloadProfile) bool {
	om, nm := &old.ObjectMeta, &next.ObjectMeta
	if om.Generation != nm.Generation || !om.DeletionTimestamp.Equal(nm.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(om.Labels, nm.Labels) || !equality.Semantic.DeepEqual(om.Annotations, nm.Annotations) ||
		!equality.Semantic.DeepEqual(om.Finalizers, nm.Finalizers) || !equality.Semantic.DeepEqual(om.OwnerReferences, nm.OwnerReferences) {
		return false
	}
	was, is := &old.Status, &next.Status
	return was.MeasurementHash == is.MeasurementHash && equality.Semantic.DeepEqual(was.PolicyRef, is.PolicyRef) &&
		equality.Semantic.DeepEqual(was.TupleLabels, is.TupleLabels) && equality.Semantic.DeepEqual(was.SelectorLabels, is.SelectorLabels)
}

func (c *Controller) allProfiles(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &ballastv1.WorkloadProfileList{}
	if err := c.client.List(ctx, list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}
