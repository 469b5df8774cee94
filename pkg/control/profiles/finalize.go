package profiles

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// finalize purges the profile's store data (unless another live profile shares its hash)
// and removes the finalizer.
func (c *Controller) finalize(ctx context.Context, wp *ballastv1.WorkloadProfile) error {
	if !controllerutil.ContainsFinalizer(wp, ballastv1.ProfileFinalizer) {
		return nil
	}
	hash := wp.Status.MeasurementHash
	shared, err := c.hashShared(ctx, wp)
	if err != nil {
		return err
	}
	if hash != "" && !shared {
		if err := c.store.Purge(ctx, hash); err != nil {
			return fmt.Errorf("purging store data of profile %s: %w", wp.Name, err)
		}
	}
	patch := client.MergeFromWithOptions(wp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(wp, ballastv1.ProfileFinalizer)
	if err := c.client.Patch(ctx, wp, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer of %s: %w", wp.Name, err)
	}
	c.metrics.Purged.Inc()
	c.forget(wp.Name)
	logr.FromContextOrDiscard(ctx).Info("purged profile", "profile", wp.Name, "measurementHash", hash, "sharedHash", shared)
	return nil
}

// hashShared reports whether another live profile has wp's measurementHash, so its store
// data must stay.
func (c *Controller) hashShared(ctx context.Context, wp *ballastv1.WorkloadProfile) (bool, error) {
	hash := wp.Status.MeasurementHash
	if hash == "" {
		return false, nil
	}
	all := &ballastv1.WorkloadProfileList{}
	if err := c.client.List(ctx, all); err != nil {
		return false, err
	}
	for i := range all.Items {
		o := &all.Items[i]
		if o.Name != wp.Name && o.DeletionTimestamp.IsZero() && o.Status.MeasurementHash == hash {
			return true, nil
		}
	}
	return false, nil
}
