// Package reconciler adapts Ballast's typed controllers to controller-runtime: a
// controller's Reconcile takes the object it reconciles (tests call it directly), and this
// adapter fetches that object from the cache for the work queue's key.
package reconciler

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Object reconciles one fetched object of type T.
type Object[T client.Object] interface {
	Reconcile(ctx context.Context, obj T) (reconcile.Result, error)
}

// Gone is implemented by controllers that act when their object no longer exists
// (forgetting metrics, looking the object up elsewhere).
type Gone interface {
	Gone(ctx context.Context, key types.NamespacedName) (reconcile.Result, error)
}

// For returns a reconcile.Reconciler that reads the key's object with c into a fresh
// newObj() and calls r.Reconcile; a missing object goes to r.Gone when r has it.
func For[T client.Object](c client.Reader, newObj func() T, r Object[T]) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		obj := newObj()
		if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
			if !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			}
			if g, ok := any(r).(Gone); ok {
				return g.Gone(ctx, req.NamespacedName)
			}
			return reconcile.Result{}, nil
		}
		return r.Reconcile(ctx, obj)
	})
}
