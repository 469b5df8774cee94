package enrollment

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// IndexPods registers the field indexes the controllers use to find pods in the cache: by
// profile-ref annotation (a profile's pods) and by mode label value (the resize-mode pods
// the OOM and pressure polls read every second, without scanning every enrolled pod). Call
// once, before the manager starts.
func IndexPods(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &corev1.Pod{}, ProfileRefIndex, func(o client.Object) []string {
		if ref := o.GetAnnotations()[ballastv1.ProfileRefAnnotation]; ref != "" {
			return []string{ref}
		}
		return nil
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &corev1.Pod{}, ModeIndex, func(o client.Object) []string {
		if m := o.GetLabels()[ballastv1.ModeLabel]; m != "" {
			return []string{m}
		}
		return nil
	})
}
