package understudy

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Bounds of holds and of surges started on an eviction request alone (docs/understudy.md
// "Bounded trust").
const (
	// DefaultMaxHold is --understudy-max-hold's default.
	DefaultMaxHold = time.Hour
	// EvictionSurgeInterval is how long after one surge started on an eviction alone (the
	// pod's node carried no doom signal) the next such surge of the same Understudy waits.
	// Evictions in between are not held. Such a surge waits for the evictor to come back
	// and take the pod up to the hold limit after it started; past it the stand-in is
	// removed and the original pod kept.
	EvictionSurgeInterval = time.Hour
	// maxSeen bounds the webhook's per-replica memory of held pods.
	maxSeen = 10000
)

// holdLimit is how long any hold of u may last: readinessDeadlineSeconds, clamped to
// --understudy-max-hold.
func (o Options) holdLimit(s ballastv1.UnderstudySpec) time.Duration {
	limit := time.Duration(ballastv1.UnderstudyReadinessDeadline(s)) * time.Second
	if o.MaxHold > 0 && o.MaxHold < limit {
		return o.MaxHold
	}
	return limit
}

// evictionSurgeLimited reports whether a new eviction-only surge of st must wait.
func evictionSurgeLimited(st *ballastv1.UnderstudyStatus, now time.Time) bool {
	return st.LastEvictionSurgeTime != nil && now.Sub(st.LastEvictionSurgeTime.Time) < EvictionSurgeInterval
}

// evictionSurge reports whether the current surge started on an eviction alone.
func evictionSurge(st *ballastv1.UnderstudyStatus) bool {
	return st.LastEvictionSurgeTime != nil && st.LastSurgeTime != nil && st.LastEvictionSurgeTime.Equal(st.LastSurgeTime)
}

// seenHold is the first and the latest held eviction of one pod seen by this replica.
type seenHold struct{ first, last time.Time }

// firstSeen remembers, per replica and in memory, when this replica first held the
// eviction of a pod, so that a hold is bounded even when no leader runs and no status
// could be written. An entry not refreshed for a whole limit starts over.
type firstSeen struct {
	mu   sync.Mutex
	pods map[string]seenHold
}

// since records a held eviction of pod uid (namespace/name/UID) at now and returns when this hold episode started;
// ok is false when the memory is full (the caller then does not hold).
func (s *firstSeen) since(uid string, now time.Time, limit time.Duration) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods == nil {
		s.pods = map[string]seenHold{}
	}
	h, ok := s.pods[uid]
	if !ok || now.Sub(h.last) >= limit {
		if !ok && len(s.pods) >= maxSeen {
			s.prune(now, limit)
			if len(s.pods) >= maxSeen {
				return now, false
			}
		}
		h.first = now
	}
	h.last = now
	s.pods[uid] = h
	return h.first, true
}

// prune drops the episodes that ended a whole limit ago.
func (s *firstSeen) prune(now time.Time, limit time.Duration) {
	for uid, h := range s.pods {
		if now.Sub(h.last) >= limit {
			delete(s.pods, uid)
		}
	}
}

// keepOriginal steers the scale-back of a surge whose doomed pod was never evicted and
// whose node is not doomed: the original pod loses the -1000 deletion cost and every other
// live pod of the target gets it, so the ReplicaSet removes a stand-in, not the original.
func (c *Controller) keepOriginal(ctx context.Context, t target, doomedPod *corev1.Pod) error {
	if doomedPod.Annotations[ballastv1.PodDeletionCostAnnotation] == ballastv1.DoomedPodDeletionCost {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, ballastv1.PodDeletionCostAnnotation)
		if err := c.client.Patch(ctx, doomedPod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("resetting the deletion cost of pod %s/%s: %w", doomedPod.Namespace, doomedPod.Name, err)
		}
	}
	for i := range t.pods {
		if p := &t.pods[i]; p.Name != doomedPod.Name && !podGone(p) {
			if err := c.markDoomed(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}
