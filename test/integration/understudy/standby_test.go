package understudy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

// TestStandbyHoldsEvictions: two ballast-control replicas under the leader Lease, the
// webhook configurations pointing at the standby (not the leader). A kubectl drain of a
// protected singleton's node must still be held until the stand-in is Ready: every replica
// serves the eviction webhook, and its index and cache must run without the Lease (the
// two-node tier found a standby that let every protected eviction through).
func TestStandbyHoldsEvictions(t *testing.T) {
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
	// A Lease an earlier test's replica left behind (held until it expires) would make the
	// standby the leader partway through: start from no Lease, so its first holder is the
	// replica started first.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ballast-system", Name: ballastv1.LeaderElectionID}}
	if err := sb.Client.Delete(c, lease); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// The leader serves no webhook call: its webhook port is one nobody calls.
	if a, err = sb.StartReplica(c, "ballast-control-leader", port); err != nil {
		t.Fatal(err)
	}
	var leader string
	waitFor(t, c, "the first replica holds the Lease", func() error {
		if leader, err = sb.LeaseHolder(c); err != nil || leader == "" {
			return fmt.Errorf("holder %q (%v)", leader, err)
		}
		return nil
	})
	if b, err = sb.StartReplica(c, "ballast-control-standby", sb.WebhookPort()); err != nil {
		t.Fatal(err)
	}
	if h, _ := sb.LeaseHolder(c); h != leader {
		t.Fatalf("the Lease moved to %q when the standby started (leader was %q)", h, leader)
	}

	if _, err := sb.DeploySingleton(c, "team-standby", "web", nil); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-standby", "guard", "web", nil)
	wantPhase(t, c, "team-standby", "guard", ballastv1.UnderstudyIdle)
	old := onePod(t, c, "team-standby", "web")
	out, wall, err := drain(c, old.Spec.NodeName, "--pod-selector=app=web")
	if err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	t.Logf("kubectl drain through the standby's webhook: wall %s\n%s", wall.Round(time.Millisecond), out)
	if !strings.Contains(out, "held by Understudy team-standby/guard: waiting for a ready stand-in") {
		t.Errorf("the standby let the protected eviction through (leader %s):\n%s", leader, out)
	}
	if h, _ := sb.LeaseHolder(c); h != leader {
		t.Errorf("the Lease moved to %q during the test (leader was %q)", h, leader)
	}
}
