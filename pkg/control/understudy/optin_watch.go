package understudy

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// registerOptIn adds the leader-only controller of opt-in relocations: Deployments that
// carry RelocationStateAnnotation (the initial list finds those a previous leader left) and
// the pods of those Deployments.
func (c *Controller) registerOptIn(mgr ctrl.Manager, uc cache.Cache, podCaches []cache.Cache) error {
	self := func(d *appsv1.Deployment) []reconcile.Request {
		k := client.ObjectKeyFromObject(d)
		if _, ok := d.Annotations[RelocationStateAnnotation]; ok || c.optIns.has(k) {
			return []reconcile.Request{{NamespacedName: k}}
		}
		return nil
	}
	b := ctrl.NewControllerManagedBy(mgr).Named("understudy-relocation").
		WatchesRawSource(source.Kind(uc, &appsv1.Deployment{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, d *appsv1.Deployment) []reconcile.Request { return self(d) })))
	for _, pc := range podCaches {
		b = b.WatchesRawSource(source.Kind(pc, &corev1.Pod{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, p *corev1.Pod) []reconcile.Request {
				k := types.NamespacedName{Namespace: p.Namespace, Name: DeploymentOf(p)}
				if k.Name != "" && c.optIns.has(k) {
					return []reconcile.Request{{NamespacedName: k}}
				}
				return nil
			})))
	}
	return b.Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		return c.ReconcileOptIn(ctx, req.NamespacedName)
	}))
}
