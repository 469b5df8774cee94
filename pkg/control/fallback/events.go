package fallback

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
)

// Event reasons of the fallback (on the BallastConfig "ballast").
const (
	// ReasonMetricsAPIUnavailable: metrics.k8s.io is not served while enrolled pods run on
	// nodes without a node agent.
	ReasonMetricsAPIUnavailable = "MetricsAPIUnavailable"
	// ReasonMetricsAPIAvailable: it is served again.
	ReasonMetricsAPIAvailable = "MetricsAPIAvailable"
)

type pendingEvent struct{ typ, reason, msg string }

func apiUnavailableEvent(msg string) pendingEvent {
	return pendingEvent{corev1.EventTypeWarning, ReasonMetricsAPIUnavailable,
		"enrolled pods on nodes without a live node agent are not measured: " + msg}
}

func apiAvailableEvent() pendingEvent {
	return pendingEvent{corev1.EventTypeNormal, ReasonMetricsAPIAvailable,
		"metrics.k8s.io is served again: pods on nodes without a live node agent are measured through it"}
}

// publish attaches e to the BallastConfig (the cluster-wide object operators watch); with
// no BallastConfig nothing is measured anyway, so nothing is published.
func (c *Controller) publish(ctx context.Context, e pendingEvent) {
	bc := &ballastv1.BallastConfig{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: ballastv1.BallastConfigName}, bc); err != nil {
		return
	}
	c.events.Publish(events.Event{Object: bc, Type: e.typ, Reason: e.reason, Message: e.msg})
}
