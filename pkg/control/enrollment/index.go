package enrollment

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// IndexPods registers the profile-ref field index the controllers use to find a profile's
// pods in the cache. Call once, before the manager starts.
func IndexPods(ctx context.Context, idx client.FieldIndexer) error {
	return idx.IndexField(ctx, &corev1.Pod{}, ProfileRefIndex, func(o client.Object) []string {
		if ref := o.GetAnnotations()[ballastv1.ProfileRefAnnotation]; ref != "" {
			return []string{ref}
		}
		return nil
	})
}
