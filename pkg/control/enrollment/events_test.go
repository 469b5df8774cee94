package enrollment

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
)

func TestSizedEventOncePerPodAndLimitedPerProfile(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	c := &Controller{clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	c.SetEvents(events.New(rec))
	pod := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-" + string(rune('a'+i)),
			UID: types.UID(rune('a' + i)), Annotations: map[string]string{
				ballastv1.ProfileRefAnnotation:                 "shop-api-1",
				ballastv1.AppliedAnnotation("cpu", "request"):  "300m",
				ballastv1.AppliedAnnotation("memory", "limit"): "231Mi",
			}}}
	}
	c.sized(pod(0), "shop-api-1")
	c.sized(pod(0), "shop-api-1") // the same pod again: no second event
	if got := len(rec.Events); got != 1 {
		t.Fatalf("%d events for one pod seen twice, want 1", got)
	}
	if e := <-rec.Events; e != "Normal Sized sized at admission from WorkloadProfile shop-api-1: cpu request 300m, memory limit 231Mi" {
		t.Errorf("event = %q", e)
	}
	for i := 1; i < 20; i++ { // a rollout: the rest of the burst, then nothing within the minute
		c.sized(pod(i), "shop-api-1")
	}
	if got := len(rec.Events); got != sizedBurst-1 {
		t.Errorf("%d more events in a 19-pod rollout, want %d", got, sizedBurst-1)
	}
	plain := pod(30)
	delete(plain.Annotations, ballastv1.AppliedAnnotation("cpu", "request"))
	delete(plain.Annotations, ballastv1.AppliedAnnotation("memory", "limit"))
	c.sized(plain, "shop-api-2")
	if got := len(rec.Events); got != sizedBurst-1 {
		t.Errorf("a pod with no applied-* annotations got an event")
	}
}
