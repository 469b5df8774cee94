package understudy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// TestDrainHoldsUntilStandInReady is the main acceptance of SPEC §15: the real kubectl
// drain of the node running a protected singleton sees 429s and retries, the stand-in lands
// on the other node and turns Ready, the eviction goes through, and the Deployment ends at
// one replica on the surviving node; the Ready pods never drop below 1.
func TestDrainHoldsUntilStandInReady(t *testing.T) {
	c := ctx(t, 3*time.Minute)
	defer uncordonAll(t, c)
	if _, err := sb.DeploySingleton(c, "team-drain", "web", nil); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-drain", "guard", "web", nil)
	wantPhase(t, c, "team-drain", "guard", ballastv1.UnderstudyIdle)
	old := onePod(t, c, "team-drain", "web")
	doomed := old.Spec.NodeName

	w := watch("team-drain", "web", old.Name)
	start := time.Now()
	out, wall, err := drain(c, doomed, "--pod-selector=app=web")
	minReady, maxReady, samples := w.end()
	if w.doomedEnd.IsZero() { // gone between two samples, before drain returned
		w.doomedEnd = start.Add(wall)
	}
	if !w.standIn.IsZero() {
		t.Logf("held %s (drain start to the doomed pod's eviction); stand-in Ready %s after the drain started",
			w.doomedEnd.Sub(start).Round(10*time.Millisecond), w.standIn.Sub(start).Round(10*time.Millisecond))
	}
	if err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	t.Logf("kubectl drain of %s: wall %s, Ready pods min %d max %d over %d samples", doomed, wall.Round(time.Millisecond), minReady, maxReady, samples)
	if !strings.Contains(out, "held by Understudy team-drain/guard: waiting for a ready stand-in") {
		t.Errorf("drain did not see the 429 hold:\n%s", out)
	}
	if minReady != 1 {
		t.Errorf("minimum Ready pods during the drain = %d, want 1", minReady)
	}
	if maxReady < 2 {
		t.Errorf("maximum Ready pods = %d: the stand-in never ran beside the doomed pod", maxReady)
	}
	u := wantPhase(t, c, "team-drain", "guard", ballastv1.UnderstudyIdle)
	if u.Status.LastSurgeTime == nil || u.Status.LastReleaseTime == nil {
		t.Fatalf("status %+v: want lastSurgeTime and lastReleaseTime", u.Status)
	}
	t.Logf("held: surge at %s, released (scale-back) at %s; drain output:\n%s", u.Status.LastSurgeTime.Format(time.RFC3339),
		u.Status.LastReleaseTime.Format(time.RFC3339), out)
	now := onePod(t, c, "team-drain", "web")
	if now.Spec.NodeName == doomed || now.Name == old.Name {
		t.Errorf("remaining pod %s on %s, want a new pod off %s", now.Name, now.Spec.NodeName, doomed)
	}
	// Events on the Understudy (SurgeStarted, EvictionHeld, Released) and on the doomed pod.
	waitFor(t, c, "events", func() error {
		var evs corev1.EventList
		if err := sb.Client.List(c, &evs, client.InNamespace("team-drain")); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			seen[e.InvolvedObject.Kind+"/"+e.Reason] = true
		}
		for _, want := range []string{"Understudy/SurgeStarted", "Understudy/EvictionHeld", "Understudy/Released", "Pod/SurgeStarted"} {
			if !seen[want] {
				return fmt.Errorf("no %s event (have %v)", want, seen)
			}
		}
		return nil
	})
	d := &appsv1.Deployment{}
	if err := sb.Client.Get(c, client.ObjectKey{Namespace: "team-drain", Name: "web"}, d); err != nil || *d.Spec.Replicas != 1 {
		t.Errorf("Deployment replicas = %v (%v), want 1", d.Spec.Replicas, err)
	}
}
