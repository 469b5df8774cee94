package understudy

import (
	"context"
	"fmt"
	"testing"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

// TestLeaderFailoverMidSurge: two ballast-control replicas under the leader Lease (the
// real binary, controller-runtime's default 15 s lease). The leader is SIGKILLed mid-surge,
// the doomed pod goes while no leader runs, and the standby takes the Lease over and
// converges the Deployment back to its original replica count from the Understudy's status.
func TestLeaderFailoverMidSurge(t *testing.T) {
	c := ctx(t, 4*time.Minute)
	defer uncordonAll(t, c)
	sb.StopControl(false)
	var a, b *sandbox.Replica
	t.Cleanup(func() {
		for _, r := range []*sandbox.Replica{a, b} {
			if r != nil {
				r.Stop()
			}
		}
		rc, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := sb.StartControl(rc); err != nil {
			t.Errorf("restoring the sandbox's ballast-control: %v", err)
		}
	})
	var err error
	if a, err = sb.StartReplica(c, "ballast-control-a", sb.WebhookPort()); err != nil {
		t.Fatal(err)
	}
	var leader string
	waitFor(t, c, "replica a holds the Lease", func() error {
		if leader, err = sb.LeaseHolder(c); err != nil || leader == "" {
			return fmt.Errorf("holder %q (%v)", leader, err)
		}
		return nil
	})
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if b, err = sb.StartReplica(c, "ballast-control-b", port); err != nil {
		t.Fatal(err)
	}
	if h, _ := sb.LeaseHolder(c); h != leader {
		t.Fatalf("the Lease moved to %q when the standby started (leader was %q)", h, leader)
	}

	if _, err := sb.DeploySingleton(c, "team-failover", "web", nil); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-failover", "guard", "web", nil)
	wantPhase(t, c, "team-failover", "guard", ballastv1.UnderstudyIdle)
	old := onePod(t, c, "team-failover", "web")
	if out, err := kubectl(c, "cordon", old.Spec.NodeName); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantReplicas(t, c, "team-failover", "web", 2)
	u, err := phase(c, "team-failover", "guard")
	if err != nil || u.Status.OriginalReplicas == nil {
		t.Fatalf("surge not recorded before the kill: %+v (%v)", u.Status, err)
	}
	a.Kill()
	killed := time.Now()
	t.Logf("leader %s killed mid-surge (phase %s, originalReplicas %d)", leader, u.Status.Phase, *u.Status.OriginalReplicas)
	// The doomed pod goes while nobody leads (the webhook is down too: the eviction fails open).
	if out, err := kubectl(c, "delete", "pod", "-n", "team-failover", old.Name, "--wait=true"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r, _ := replicasOf(c, "team-failover", "web"); r != 2 {
		t.Fatalf("replicas %d with no leader, want the surge (2) still in place", r)
	}
	var took time.Duration
	waitFor(t, c, "the standby takes the Lease over", func() error {
		h, err := sb.LeaseHolder(c)
		if err != nil || h == leader || h == "" {
			return fmt.Errorf("holder %q (%v)", h, err)
		}
		took = time.Since(killed)
		return nil
	})
	wantReplicas(t, c, "team-failover", "web", 1)
	converged := time.Since(killed)
	wantPhase(t, c, "team-failover", "guard", ballastv1.UnderstudyIdle)
	t.Logf("failover: standby leads %s after the kill, Deployment back to 1 replica %s after the kill",
		took.Round(10*time.Millisecond), converged.Round(10*time.Millisecond))
	if err := b.Ready(); err != nil {
		t.Errorf("standby: %v", err)
	}
	if p := onePod(t, c, "team-failover", "web"); p.Spec.NodeName == old.Spec.NodeName {
		t.Errorf("remaining pod on the cordoned node %s", p.Spec.NodeName)
	}
}
