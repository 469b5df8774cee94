package podcache

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// PodLister returns every pod a cache holds.
type PodLister func(ctx context.Context) ([]*corev1.Pod, error)

// Lister lists the pods of c's pod informer as the cache holds them: pointers to the cached
// (slim) pods, to be read only, nothing copied. A client.List, even with
// UnsafeDisableDeepCopy, copies every pod's struct (over a kilobyte each, most of it the
// fields Slim emptied) into the list's items: 25 MB at 20,000 enrolled pods for a loop
// that runs every cycle over all of them.
func Lister(c cache.Cache) PodLister {
	return func(ctx context.Context) ([]*corev1.Pod, error) {
		inf, err := c.GetInformer(ctx, &corev1.Pod{})
		if err != nil {
			return nil, fmt.Errorf("getting the pod informer: %w", err)
		}
		src, ok := inf.(interface{ GetStore() toolscache.Store })
		if !ok {
			return nil, fmt.Errorf("the pod informer (%T) has no store to list", inf)
		}
		if !inf.HasSynced() && !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return nil, errors.New("the pod cache did not sync")
		}
		objs := src.GetStore().List()
		out := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				out = append(out, p)
			}
		}
		return out, nil
	}
}
