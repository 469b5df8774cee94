// Package hpa is the I/O around behaviors.hpa (sizing.GuardHPA): it finds the
// HorizontalPodAutoscalers (autoscaling/v2) that scale a pod's owner, from the manager's
// informer cache, and, under behaviors.hpa: scale-target, patches their averageUtilization
// off the admission path so request × utilization stays the author's.
package hpa

import (
	"context"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Lookup reads HPAs through a reader (the manager's cache, whose HPA informer the app starts
// with the manager so that admission never waits on a first sync).
type Lookup struct {
	Reader client.Reader
	// ScaleTarget is true when this installation may patch HPAs (chart value
	// hpa.scaleTarget, flag --hpa-scale-target). Without it behaviors.hpa: scale-target
	// preserves instead, and says so.
	ScaleTarget bool
}

// Targets returns the utilization metrics of the HPAs in namespace that scale one of owners.
func (l Lookup) Targets(ctx context.Context, namespace string, owners []sizing.Owner) ([]sizing.HPATarget, error) {
	if len(owners) == 0 {
		return nil, nil
	}
	var list autoscalingv2.HorizontalPodAutoscalerList
	if err := l.Reader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing horizontalpodautoscalers in %s: %w", namespace, err)
	}
	return sizing.HPATargets(list.Items, owners), nil
}

// Guard looks up the HPAs of a pod and applies the policy's behaviors.hpa to recs. With
// ignore it reads nothing.
func (l Lookup) Guard(ctx context.Context, mode, namespace string, owners []sizing.Owner,
	recs sizing.Recommendations) (sizing.Recommendations, sizing.HPAGuard, error) {
	if mode == ballastv1.HPAIgnore {
		return recs, sizing.HPAGuard{Mode: mode}, nil
	}
	targets, err := l.Targets(ctx, namespace, owners)
	if err != nil {
		return recs, sizing.HPAGuard{Mode: mode}, err
	}
	effective := mode
	if mode == ballastv1.HPAScaleTarget && !l.ScaleTarget {
		effective = ballastv1.HPAPreserve
	}
	guarded, g := sizing.GuardHPA(effective, targets, recs)
	g.Mode = mode
	return guarded, g, nil
}

// ConflictMessage is the HPAConflict event message for the preserved metrics of g:
// "cpu request left as written: HorizontalPodAutoscaler web scales on cpu utilization 60%
// (behaviors.hpa: preserve)".
func ConflictMessage(g sizing.HPAGuard) string {
	msg := ""
	for i, t := range g.Preserved {
		if i > 0 {
			msg += "; "
		}
		what := string(t.Resource)
		if t.Container != "" {
			what = "container " + t.Container + " " + what
		}
		msg += fmt.Sprintf("%s request left as written: HorizontalPodAutoscaler %s scales on %s", what, t.HPA, t.Metric())
	}
	if g.Mode == ballastv1.HPAScaleTarget {
		return msg + " (behaviors.hpa: scale-target, but this installation may not patch HPAs: chart value hpa.scaleTarget is off)"
	}
	return msg + " (behaviors.hpa: preserve)"
}
