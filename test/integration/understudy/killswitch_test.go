package understudy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// TestKillSwitchReleasesHolds: a drain held by a stand-in that can never be Ready (and a
// readinessDeadlineSeconds far beyond the drain's timeout) finishes once the kill switch
// is activated; the hold is relaxed with reason kill_switch.
func TestKillSwitchReleasesHolds(t *testing.T) {
	c := ctx(t, 3*time.Minute)
	defer uncordonAll(t, c)
	pin := sb.Nodes[0].Name
	if _, err := sb.DeploySingleton(c, "team-kill", "web", func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{"kubernetes.io/hostname": pin}
	}); err != nil {
		t.Fatal(err)
	}
	protect(t, c, "team-kill", "guard", "web", nil) // readinessDeadlineSeconds 600
	wantPhase(t, c, "team-kill", "guard", ballastv1.UnderstudyIdle)
	onePod(t, c, "team-kill", "web")

	type result struct {
		out  string
		wall time.Duration
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, wall, err := drain(c, pin, "--pod-selector=app=web", "--timeout=100s")
		done <- result{out, wall, err}
	}()
	waitFor(t, c, "eviction held", func() error {
		u, err := phase(c, "team-kill", "guard")
		if err != nil {
			return err
		}
		if u.Status.BlockedSince == nil {
			return fmt.Errorf("nothing blocked yet (phase %s)", u.Status.Phase)
		}
		return nil
	})
	ks := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ballast-system", Name: ballastv1.KillSwitchConfigMap}}
	activated := time.Now()
	if err := sb.Client.Create(c, ks); err != nil {
		t.Fatal(err)
	}
	defer sb.Client.Delete(context.Background(), ks)
	r := <-done
	if r.err != nil {
		t.Fatalf("drain did not finish after the kill switch: %v\n%s", r.err, r.out)
	}
	t.Logf("drain finished %s after the kill switch was activated (kubectl retries every 5 s); wall %s",
		time.Since(activated).Round(10*time.Millisecond), r.wall.Round(time.Millisecond))
	if !strings.Contains(r.out, "held by Understudy team-kill/guard") {
		t.Errorf("drain was never held:\n%s", r.out)
	}
	waitFor(t, c, "Relaxed kill_switch event", func() error {
		var evs corev1.EventList
		if err := sb.Client.List(c, &evs, client.InNamespace("team-kill")); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "Relaxed" && strings.Contains(e.Message, "kill_switch") {
				return nil
			}
		}
		return fmt.Errorf("no Relaxed kill_switch event")
	})
}
