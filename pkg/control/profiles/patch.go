package profiles

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// material strips what changes on every computation without changing meaning
// (lastUpdated), so that an unchanged profile costs no API write.
func material(st *ballastv1.WorkloadProfileStatus) *ballastv1.WorkloadProfileStatus {
	m := st.DeepCopy()
	for i := range m.Containers {
		for j := range m.Containers[i].UsageStats {
			m.Containers[i].UsageStats[j].LastUpdated = nil
		}
	}
	for j := range m.PodUsageStats {
		m.PodUsageStats[j].LastUpdated = nil
	}
	return m
}

// patchStatus merge-patches the fields this controller owns when ShouldWriteStatus says
// so, and reports whether a change was held back for the refresh interval. The identity
// fields (tupleLabels, selectorLabels, policyRef, measurementHash) belong to the enrollment
// controller and are left out, so the two never overwrite each other.
func (c *Controller) patchStatus(ctx context.Context, wp *ballastv1.WorkloadProfile, next *ballastv1.WorkloadProfileStatus, now time.Time) (held bool, err error) {
	write, why := ShouldWriteStatus(&wp.Status, next, c.writes.last(wp.Name, &wp.Status), now, c.refresh)
	if !write {
		return why == WriteHeld, nil
	}
	body := map[string]any{
		"containers":      nullIfEmpty(len(next.Containers), next.Containers),
		"podUsageStats":   nullIfEmpty(len(next.PodUsageStats), next.PodUsageStats),
		"meetsThreshold":  next.MeetsThreshold,
		"activeWorkloads": next.ActiveWorkloads,
		"activePods":      next.ActivePods,
		"resize":          resizeSummaryPatch(next.Resize),
		"conditions":      nullIfEmpty(len(next.Conditions), next.Conditions),
		"fallback":        next.Fallback, // nil removes it
	}
	if next.State != "" {
		body["state"] = next.State
	}
	if next.Summary != "" {
		body["summary"] = next.Summary
	}
	b, err := json.Marshal(map[string]any{"status": body})
	if err != nil {
		return false, err
	}
	if err := c.client.Status().Patch(ctx, wp, client.RawPatch(types.MergePatchType, b)); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("patching status of WorkloadProfile %s: %w", wp.Name, err)
	}
	c.writes.wrote(wp.Name, now)
	return false, nil
}

// resizeSummaryPatch spells every field of status.resize, zero ones as null: the summary's
// fields are omitempty, and a merge patch leaves a field it omits unchanged, so a count
// falling to zero would otherwise never be written.
func resizeSummaryPatch(r ballastv1.ResizeSummary) map[string]any {
	return map[string]any{
		"deferredPods":        nullIfEmpty(int(r.DeferredPods), r.DeferredPods),
		"infeasiblePods":      nullIfEmpty(int(r.InfeasiblePods), r.InfeasiblePods),
		"oldestDeferredSince": r.OldestDeferredSince,
	}
}

func nullIfEmpty(n int, v any) any {
	if n == 0 {
		return nil
	}
	return v
}
