package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// waitEvent waits for a core v1 Event from source ballast about the object named name (in
// namespace ns, "" for cluster-scoped) with the given reason, whose message contains want.
func waitEvent(t *testing.T, e *env, ns, name, reason, want string) corev1.Event {
	t.Helper()
	var found corev1.Event
	eventually(t, 30*time.Second, fmt.Sprintf("event %s on %s", reason, name), func() error {
		list := &corev1.EventList{}
		opts := []client.ListOption{}
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := e.c.List(context.Background(), list, opts...); err != nil {
			return err
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name != name {
				continue
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
			if ev.Reason == reason && ev.Source.Component == ballastv1.EventComponent && strings.Contains(ev.Message, want) {
				found = ev
				return nil
			}
		}
		return fmt.Errorf("events on %s: %v", name, seen)
	})
	return found
}
