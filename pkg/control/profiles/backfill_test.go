package profiles

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/backfill"
	"github.com/ballastk8s/ballast/pkg/control/config"
)

type fakeBackfiller struct {
	res  backfill.Result
	reqs []backfill.Request
}

func (f *fakeBackfiller) Run(_ context.Context, r backfill.Request) backfill.Result {
	f.reqs = append(f.reqs, r)
	return f.res
}

// TestApplyBackfill: a new profile is backfilled once, up to its creation; a transient
// failure is retried only after RetryAfter, and an unreachable Prometheus is not asked for
// other profiles meanwhile; a profile that already has samples, or is done, is left alone.
func TestApplyBackfill(t *testing.T) {
	created := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	now := created.Add(time.Minute)
	snap := config.Snapshot{Config: &ballastv1.BallastConfigSpec{RetentionWindow: "48h"}}
	newProfile := func(name string) (*ballastv1.WorkloadProfile, *ballastv1.WorkloadProfileStatus) {
		wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		return wp, &ballastv1.WorkloadProfileStatus{MeasurementHash: "0123456789abcdef", SelectorLabels: map[string]string{"app": name}}
	}
	setup := func(res backfill.Result) (*Controller, *fakeBackfiller) {
		f := &fakeBackfiller{res: res}
		c := &Controller{}
		c.SetBackfill(f, backfill.NewMetrics(prometheus.NewRegistry()), BackfillOptions{RetryAfter: 5 * time.Minute})
		return c, f
	}

	t.Run("backfilled once", func(t *testing.T) {
		c, f := setup(backfill.Result{Reason: backfill.ResultBackfilled, Message: "history: backfilled 1.00 days from Prometheus"})
		wp, next := newProfile("web")
		if ev := c.applyBackfill(context.Background(), wp, next, snap, now); len(ev) != 1 || ev[0].Reason != EventBackfilled {
			t.Errorf("events %+v", ev)
		}
		cond := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionBackfilled)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != ballastv1.ReasonBackfilled {
			t.Fatalf("condition %+v", cond)
		}
		if r := f.reqs[0]; !r.End.Equal(created) || !r.Start.Equal(now.Add(-48*time.Hour)) || r.Retention != 48*time.Hour {
			t.Errorf("request %+v", r)
		}
		c.applyBackfill(context.Background(), wp, next, snap, now.Add(time.Hour))
		if len(f.reqs) != 1 {
			t.Errorf("ran %d times, want once", len(f.reqs))
		}
	})
	t.Run("unavailable: retried later, other profiles wait", func(t *testing.T) {
		c, f := setup(backfill.Result{Reason: backfill.ResultUnavailable, Message: "history: not backfilled: timeout", Retry: true})
		wp, next := newProfile("web")
		if ev := c.applyBackfill(context.Background(), wp, next, snap, now); len(ev) != 1 || ev[0].Reason != EventBackfillFailed {
			t.Errorf("events %+v", ev)
		}
		if cond := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionBackfilled); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ballastv1.ReasonPrometheusUnavailable {
			t.Fatalf("condition %+v", cond)
		}
		// Another profile meanwhile is not asked, but says why at once, with a Warning.
		other, otherNext := newProfile("api")
		ev := c.applyBackfill(context.Background(), other, otherNext, snap, now.Add(time.Minute))
		cond := meta.FindStatusCondition(otherNext.Conditions, ballastv1.ConditionBackfilled)
		if cond == nil || cond.Reason != ballastv1.ReasonPrometheusUnavailable ||
			cond.Message != "history: not backfilled: timeout (not asked again until 2026-12-03T12:06:00Z)" {
			t.Errorf("the other profile's condition %+v", cond)
		}
		if len(ev) != 1 || ev[0].Reason != EventBackfillFailed {
			t.Errorf("the other profile's events %+v", ev)
		}
		if ev := c.applyBackfill(context.Background(), other, otherNext, snap, now.Add(2*time.Minute)); len(ev) != 0 {
			t.Errorf("the other profile's second pass published %+v", ev)
		}
		c.applyBackfill(context.Background(), wp, next, snap, now.Add(time.Minute))
		if len(f.reqs) != 1 {
			t.Fatalf("Prometheus asked %d times within the retry delay, want once", len(f.reqs))
		}
		// Once the delay has passed the other profile is asked too.
		c.applyBackfill(context.Background(), other, otherNext, snap, now.Add(7*time.Minute))
		if len(f.reqs) != 2 {
			t.Fatalf("the other profile not asked after the delay: %d asks", len(f.reqs))
		}
		// The same failure again after the delay: asked, but no second event.
		if ev := c.applyBackfill(context.Background(), wp, next, snap, now.Add(13*time.Minute)); len(ev) != 0 || len(f.reqs) != 3 {
			t.Errorf("after the delay: %d runs, events %+v", len(f.reqs), ev)
		}
	})
	t.Run("history already there", func(t *testing.T) {
		c, f := setup(backfill.Result{Reason: backfill.ResultBackfilled})
		wp, next := newProfile("web")
		next.Containers = []ballastv1.ContainerProfile{{Name: "app", UsageStats: []ballastv1.UsageStats{{Resource: "cpu", Source: "s", Samples: 10}}}}
		c.applyBackfill(context.Background(), wp, next, snap, now)
		if len(f.reqs) != 0 || meta.FindStatusCondition(next.Conditions, ballastv1.ConditionBackfilled) != nil {
			t.Errorf("a profile with samples was backfilled")
		}
	})
	t.Run("no history is final", func(t *testing.T) {
		c, f := setup(backfill.Result{Reason: backfill.ResultNoHistory, Message: "history: none"})
		wp, next := newProfile("web")
		c.applyBackfill(context.Background(), wp, next, snap, now)
		c.applyBackfill(context.Background(), wp, next, snap, now.Add(time.Hour))
		if len(f.reqs) != 1 {
			t.Errorf("ran %d times, want once", len(f.reqs))
		}
	})
}
