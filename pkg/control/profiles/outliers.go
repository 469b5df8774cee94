package profiles

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/recommend"
)

// EventRecommendationBounded (Warning) is recorded when the profile's RecommendationBounded
// condition turns True: a node's samples disagree with the other nodes' and a
// recommendation is capped instead of followed.
const EventRecommendationBounded = "RecommendationBounded"

// boundOutliers caps the recommendations of res whose series one node's samples disagree
// with (recommend.BoundOutliers) and returns the outliers found.
func boundOutliers(res *recommend.Result, nodes map[string]map[string][]recommend.NodeShare) []recommend.Outlier {
	if len(nodes) == 0 {
		return nil
	}
	return recommend.BoundOutliers(res.Containers, nodes, recommend.OutlierParams{})
}

// setBounded writes the RecommendationBounded condition of next: True naming the outliers,
// or removed when there are none.
func setBounded(ctx context.Context, wp *ballastv1.WorkloadProfile, next *ballastv1.WorkloadProfileStatus,
	outliers []recommend.Outlier, now time.Time) {
	if len(outliers) == 0 {
		meta.RemoveStatusCondition(&next.Conditions, ballastv1.ConditionRecommendationBounded)
		return
	}
	cond := recommend.OutlierCondition(outliers, wp.Generation, now)
	if !isTrue(wp.Status.Conditions, ballastv1.ConditionRecommendationBounded) {
		o := outliers[0]
		logf.FromContext(ctx).Info("a node's samples disagree with the other nodes': recommendation capped, not followed",
			"profile", wp.Name, "node", o.Node, "container", o.Container, "resource", o.Resource,
			"nodeMean", o.NodeMean, "peersMedian", o.PeersMedian, "outliers", len(outliers))
	}
	meta.SetStatusCondition(&next.Conditions, cond)
}

// boundedTransition is the RecommendationBounded event of a reconcile, if the condition
// turns True.
func boundedTransition(wp *ballastv1.WorkloadProfile, next *ballastv1.WorkloadProfileStatus) []events.Event {
	c := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionRecommendationBounded)
	if c == nil || c.Status != metav1.ConditionTrue || isTrue(wp.Status.Conditions, ballastv1.ConditionRecommendationBounded) {
		return nil
	}
	return []events.Event{{Object: wp, Type: corev1.EventTypeWarning, Reason: EventRecommendationBounded, Message: c.Message}}
}
