package hpa

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Rescale asks for one HPA metric's averageUtilization to follow a pod's new request sum.
type Rescale struct {
	Namespace string
	Target    sizing.HPATarget
	// Before and After are the request sums the metric reads, as the pod had them and as
	// Ballast writes them (sizing.RequestSum).
	Before, After sizing.Units
}

// Scaler patches HPAs for behaviors.hpa: scale-target. Admission must not call the API
// server, so the webhook queues a Rescale and returns; the Scaler runs with the manager (on
// every replica, like the webhook) and patches off the admission path. Every patch starts from
// the base recorded on the HPA (sizing.HPABase), so repeating a Rescale changes nothing and
// replicas may race: the patch carries the resourceVersion it read.
type Scaler struct {
	client client.Client
	api    client.Reader // uncached, to re-read after a conflict
	events *events.Recorder
	log    logr.Logger
	queue  chan Rescale
}

// queueSize bounds the Rescales waiting; past it a Rescale is dropped (the next admission or
// resize of the workload asks again).
const queueSize = 256

// NewScaler returns a Scaler; add it to the manager (Start).
func NewScaler(c client.Client, api client.Reader, ev *events.Recorder, log logr.Logger) *Scaler {
	return &Scaler{client: c, api: api, events: ev, log: log, queue: make(chan Rescale, queueSize)}
}

// Enqueue queues r without blocking; false when the queue is full or s is nil.
func (s *Scaler) Enqueue(r Rescale) bool {
	if s == nil {
		return false
	}
	select {
	case s.queue <- r:
		return true
	default:
		s.log.Info("hpa rescale queue full; dropped", "namespace", r.Namespace, "hpa", r.Target.HPA)
		return false
	}
}

// NeedLeaderElection is false: every replica serves the webhook and drains its own queue.
func (s *Scaler) NeedLeaderElection() bool { return false }

// Start drains the queue until ctx ends.
func (s *Scaler) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-s.queue:
			if err := s.Apply(ctx, r); err != nil {
				s.log.Error(err, "rescaling hpa target", "namespace", r.Namespace, "hpa", r.Target.HPA)
			}
		}
	}
}

// Apply patches the HPA of r now (Start calls it; the resize controller, which already writes
// to the API server, may call it directly). A conflict is retried from a fresh read.
func (s *Scaler) Apply(ctx context.Context, r Rescale) error {
	var reader client.Reader = s.client
	for range 3 {
		err := s.apply(ctx, reader, r)
		if !apierrors.IsConflict(err) {
			return err
		}
		reader = s.api
	}
	return fmt.Errorf("hpa %s/%s: still conflicting after 3 attempts", r.Namespace, r.Target.HPA)
}

func (s *Scaler) apply(ctx context.Context, reader client.Reader, r Rescale) error {
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Target.HPA}, h); err != nil {
		return client.IgnoreNotFound(err)
	}
	target := metricTarget(h, r.Target)
	if target == nil {
		return nil // the metric changed since the lookup; the next lookup sees it
	}
	key := sizing.HPABaseAnnotation(r.Target.Index)
	// None yet, unreadable, or a target someone else changed since: the target as it is,
	// at the pod's request before this change.
	recorded, err := sizing.ParseHPABase(r.Target.Resource, h.Annotations[key])
	base := sizing.CurrentBase(recorded, err == nil, *target.AverageUtilization, r.Before)
	util, exact := sizing.ScaleTargetUtilization(base, r.After)
	base.Set = util
	value := sizing.FormatHPABase(r.Target.Resource, base)
	if util == *target.AverageUtilization && h.Annotations[key] == value {
		return nil
	}
	orig := h.DeepCopy()
	was := *target.AverageUtilization
	*target.AverageUtilization = util
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	h.Annotations[key] = value
	patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	if err := s.client.Patch(ctx, h, patch); err != nil {
		if apierrors.IsForbidden(err) {
			s.events.Publish(events.Event{Object: h, Type: corev1.EventTypeWarning, Reason: sizing.ReasonHPAConflict,
				Message: "behaviors.hpa is scale-target but Ballast may not patch this HPA (chart value hpa.scaleTarget)"})
		}
		return fmt.Errorf("patching hpa %s/%s: %w", r.Namespace, r.Target.HPA, err)
	}
	note := ""
	if !exact {
		note = ", rounded up: not exact"
	}
	s.events.Publish(events.Event{Object: h, Type: corev1.EventTypeNormal, Reason: sizing.ReasonHPAConflict,
		Message: fmt.Sprintf("%s utilization target %d%% → %d%% so request × utilization stays %s (request now %s%s; behaviors.hpa: scale-target)",
			r.Target.Resource, was, util, sizing.FormatHPABase(r.Target.Resource, sizing.HPABase{Utilization: base.Utilization, Request: base.Request}),
			r.After.String(r.Target.Resource), note)})
	s.log.Info("rescaled hpa target", "namespace", r.Namespace, "hpa", r.Target.HPA, "metric", r.Target.Metric(),
		"utilization", util, "base", value, "exact", exact)
	return nil
}

// metricTarget returns the metric at t.Index when it is still the utilization metric t
// describes, else nil.
func metricTarget(h *autoscalingv2.HorizontalPodAutoscaler, t sizing.HPATarget) *autoscalingv2.MetricTarget {
	if t.Index < 0 || t.Index >= len(h.Spec.Metrics) {
		return nil
	}
	m := &h.Spec.Metrics[t.Index]
	var mt *autoscalingv2.MetricTarget
	switch {
	case t.Container == "" && m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == t.Resource:
		mt = &m.Resource.Target
	case t.Container != "" && m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil &&
		m.ContainerResource.Name == t.Resource && m.ContainerResource.Container == t.Container:
		mt = &m.ContainerResource.Target
	}
	if mt == nil || mt.Type != autoscalingv2.UtilizationMetricType || mt.AverageUtilization == nil {
		return nil
	}
	return mt
}
