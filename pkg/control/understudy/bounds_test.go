package understudy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func cost(f *fixture, name string) string {
	return getPod(f, name).Annotations[ballastv1.PodDeletionCostAnnotation]
}

// A review for a protected pod whose node carries no doom signal (what anyone who reaches
// the webhook port can send): one surge at most, and the scale-back removes the stand-in,
// never the original pod; repeats within EvictionSurgeInterval are not held.
func TestForgedEvictionKeepsTheOriginalPod(t *testing.T) {
	f := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", false), node("n2", false))
	f.reconcile("guard")
	if resp := f.ev.Handle(context.Background(), evictionRequest("app", "web-a")); resp.Allowed {
		t.Fatal("first eviction-only review not held")
	}
	u := f.reconcile("guard")
	if u.Status.Phase != ballastv1.UnderstudySurging || u.Status.LastEvictionSurgeTime == nil || *f.deployment().Spec.Replicas != 2 {
		t.Fatalf("first review: status %+v replicas %d, want one eviction-only surge", u.Status, *f.deployment().Spec.Replicas)
	}
	mustCreate(f, pod("web-b", "n2", true))
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudyReleasing {
		t.Fatalf("phase %s with a Ready stand-in", u.Status.Phase)
	}
	// Within readinessDeadlineSeconds (600 s) the evictor may still come back: nothing is
	// scaled back yet.
	f.clock.Step(9 * time.Minute)
	if f.reconcile("guard"); *f.deployment().Spec.Replicas != 2 || cost(f, "web-a") != ballastv1.DoomedPodDeletionCost {
		t.Fatalf("scaled back within the grace: replicas %d", *f.deployment().Spec.Replicas)
	}
	// Nobody evicted web-a by then: back to one replica with the stand-in marked for removal.
	f.clock.Step(2 * time.Minute)
	u = f.reconcile("guard")
	if u.Status.Phase != ballastv1.UnderstudyIdle || u.Status.OriginalReplicas != nil || *f.deployment().Spec.Replicas != 1 {
		t.Fatalf("after the grace: status %+v replicas %d", u.Status, *f.deployment().Spec.Replicas)
	}
	if a, b := cost(f, "web-a"), cost(f, "web-b"); a != "" || b != ballastv1.DoomedPodDeletionCost {
		t.Fatalf("deletion costs web-a %q web-b %q: the ReplicaSet would remove the original pod", a, b)
	}
	if err := f.c.Delete(context.Background(), getPod(f, "web-b")); err != nil { // the ReplicaSet's scale-down
		t.Fatal(err)
	}
	// A repeat within EvictionSurgeInterval: allowed (nothing would replace the pod), no
	// blockedSince, no surge.
	f.clock.Step(time.Minute)
	if resp := f.ev.Handle(context.Background(), evictionRequest("app", "web-a")); !resp.Allowed {
		t.Fatal("repeated eviction-only review held")
	}
	if u := f.reconcile("guard"); u.Status.BlockedSince != nil || u.Status.OriginalReplicas != nil || *f.deployment().Spec.Replicas != 1 {
		t.Fatalf("repeat: status %+v replicas %d, want no surge", u.Status, *f.deployment().Spec.Replicas)
	}
	// A doomed node is corroboration: held and surged at once, rate limit or not.
	f.update(withRV(f, node("n1", true)))
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudySurging || *f.deployment().Spec.Replicas != 2 {
		t.Fatalf("cordon after an eviction-only surge: phase %s", u.Status.Phase)
	}
	if resp := f.ev.Handle(context.Background(), evictionRequest("app", "web-a")); resp.Allowed {
		t.Error("eviction on a cordoned node not held")
	}
}

// An eviction-only surge whose pod the evictor does take after the release ends as
// before: the stand-in stays.
func TestEvictionOnlySurgeThenRealEviction(t *testing.T) {
	f := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", false), node("n2", false))
	f.reconcile("guard")
	f.ev.Handle(context.Background(), evictionRequest("app", "web-a"))
	f.reconcile("guard")
	mustCreate(f, pod("web-b", "n2", true))
	f.reconcile("guard")
	if resp := f.ev.Handle(context.Background(), evictionRequest("app", "web-a")); !resp.Allowed {
		t.Fatal("eviction held with a Ready stand-in")
	}
	if err := f.c.Delete(context.Background(), getPod(f, "web-a")); err != nil { // the eviction
		t.Fatal(err)
	}
	if u := f.reconcile("guard"); u.Status.Phase != ballastv1.UnderstudyIdle || *f.deployment().Spec.Replicas != 1 || cost(f, "web-b") != "" {
		t.Fatalf("status %+v replicas %d web-b cost %q", u.Status, *f.deployment().Spec.Replicas, cost(f, "web-b"))
	}
}

// A dry-run review, or one without the user the API server always fills in, gets the
// real answer but records nothing and starts no surge.
func TestUnrecordedReviewsStartNoSurge(t *testing.T) {
	for name, mut := range map[string]func(*fixture) any{
		"dry-run": func(f *fixture) any {
			r := evictionRequest("app", "web-a")
			r.DryRun = ptr.To(true)
			return f.ev.Handle(context.Background(), r).Allowed
		},
		"no user": func(f *fixture) any {
			r := evictionRequest("app", "web-a")
			r.UserInfo.Username = ""
			return f.ev.Handle(context.Background(), r).Allowed
		},
		"not an eviction": func(f *fixture) any {
			r := evictionRequest("app", "web-a")
			r.SubResource = ""
			return !f.ev.Handle(context.Background(), r).Allowed // allowed, without effect
		},
	} {
		f := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", false))
		f.reconcile("guard")
		if allowed := mut(f); allowed.(bool) {
			t.Errorf("%s: unexpected answer", name)
		}
		if u := f.reconcile("guard"); u.Status.BlockedSince != nil || *f.deployment().Spec.Replicas != 1 {
			t.Errorf("%s: blockedSince %v replicas %d, want no surge", name, u.Status.BlockedSince, *f.deployment().Spec.Replicas)
		}
	}
}

// With no leader and no status written, a replica still releases a hold max-hold after it
// first held the pod; a recorded hold is clamped to max-hold too.
func TestMaxHoldBoundsIdleHoldsWithoutALeader(t *testing.T) {
	f := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", false), node("n2", false))
	f.reconcile("guard")
	f.ev.opts.MaxHold = 2 * time.Minute
	f.update(withRV(f, node("n1", true))) // cordoned after the last reconcile: the leader is gone
	dry := evictionRequest("app", "web-a")
	dry.DryRun = ptr.To(true)
	if resp := f.ev.Handle(context.Background(), dry); resp.Allowed {
		t.Fatal("not held at first")
	}
	f.clock.Step(119 * time.Second)
	if resp := f.ev.Handle(context.Background(), dry); resp.Allowed {
		t.Fatal("released before max-hold")
	}
	f.clock.Step(time.Second)
	if resp := f.ev.Handle(context.Background(), dry); !resp.Allowed {
		t.Fatal("Idle hold outlived max-hold (nothing was recorded, no leader)")
	}
	// A recorded hold (blockedSince) in a fresh replica: released at max-hold, not at
	// readinessDeadlineSeconds (600 s).
	g := newFixture(t, us("guard", "web"), settled(1), pod("web-a", "n1", true), node("n1", false))
	g.reconcile("guard")
	g.ev.opts.MaxHold = 2 * time.Minute
	g.update(withRV(g, node("n1", true)))
	if resp := g.ev.Handle(context.Background(), evictionRequest("app", "web-a")); resp.Allowed {
		t.Fatal("not held")
	}
	if u := g.understudy("guard"); u.Status.BlockedSince == nil {
		t.Fatal("blockedSince not recorded")
	}
	g.ev.seen = firstSeen{} // another replica: only the status bound applies
	g.clock.Step(2 * time.Minute)
	if resp := g.ev.Handle(context.Background(), evictionRequest("app", "web-a")); !resp.Allowed {
		t.Fatal("recorded hold outlived max-hold")
	}
}

func TestFirstSeenMemoryIsBounded(t *testing.T) {
	var s firstSeen
	for i := 0; i < maxSeen; i++ {
		s.since(fmt.Sprint(i), t0, time.Minute)
	}
	if _, ok := s.since("one-more", t0, time.Minute); ok {
		t.Fatal("memory grew past maxSeen")
	}
	if first, ok := s.since("one-more", t0.Add(time.Minute), time.Minute); !ok || !first.Equal(t0.Add(time.Minute)) || len(s.pods) != 1 {
		t.Fatalf("expired episodes not pruned: ok %v first %v len %d", ok, first, len(s.pods))
	}
}
