package profiles

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
)

// boundPods lists the pods stamped with this profile from the cache.
func (c *Controller) boundPods(ctx context.Context, name string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.client.List(ctx, list, client.MatchingFields{enrollment.ProfileRefIndex: name}); err != nil {
		return nil, fmt.Errorf("listing pods of profile %s: %w", name, err)
	}
	return list.Items, nil
}

// count recomputes activePods, activeWorkloads and the resize summary (SPEC §6.5: never
// incremental). Only live pods still on the ladder count.
func (c *Controller) count(ctx context.Context, st *ballastv1.WorkloadProfileStatus, pods []corev1.Pod) {
	workloads := map[resolve.Workload]bool{}
	var active, deferred, infeasible int32
	var oldest *metav1.Time
	for i := range pods {
		p := &pods[i]
		if !p.DeletionTimestamp.IsZero() || !ballastv1.ValidMode(p.Labels[ballastv1.ModeLabel]) {
			continue
		}
		active++
		workloads[c.resolver.Workload(ctx, p)] = true
		switch p.Annotations[ballastv1.ResizeStateAnnotation] {
		case ballastv1.ResizeStateDeferred:
			deferred++
			if t, err := time.Parse(time.RFC3339, p.Annotations[ballastv1.ResizeStateSinceAnnotation]); err == nil {
				if oldest == nil || t.Before(oldest.Time) {
					oldest = &metav1.Time{Time: t}
				}
			}
		case ballastv1.ResizeStateInfeasible:
			infeasible++
		}
	}
	st.ActivePods, st.ActiveWorkloads = active, int32(len(workloads))
	st.Resize = ballastv1.ResizeSummary{DeferredPods: deferred, InfeasiblePods: infeasible, OldestDeferredSince: oldest}
}
