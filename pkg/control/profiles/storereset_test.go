package profiles

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/recommend"
)

// epochStore is a fake Store with a fixed store epoch (or error).
type epochStore struct {
	epoch time.Time
	err   error
}

func (epochStore) Read(context.Context, string, time.Time, time.Duration) (Series, error) {
	return Series{}, nil
}
func (epochStore) Purge(context.Context, string) error { return nil }
func (s epochStore) StoreEpoch(context.Context, time.Time) (time.Time, error) {
	return s.epoch, s.err
}

func sufficientStatus(lastSeen time.Time, samples int64) *ballastv1.WorkloadProfileStatus {
	t := metav1.NewTime(lastSeen)
	return &ballastv1.WorkloadProfileStatus{State: ballastv1.StateSufficient, MeetsThreshold: true,
		Containers: []ballastv1.ContainerProfile{{Name: "app", LastSeen: &t,
			UsageStats:      []ballastv1.UsageStats{{Resource: "cpu", Samples: samples, TimeSpan: "24h0m0s"}},
			Recommendations: map[string]ballastv1.Recommendation{"cpu": {Request: "300m"}}}}}
}

func result(met bool, samples int64) recommend.Result {
	r := recommend.Result{MeetsThreshold: met}
	if samples > 0 {
		r.Containers = []ballastv1.ContainerProfile{{Name: "app", UsageStats: []ballastv1.UsageStats{{Resource: "cpu", Samples: samples}}}}
	}
	return r
}

func TestSurvivesReset(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	history := sufficientStatus(now.Add(-time.Minute), 1000) // samples since now-24h1m
	staleStatus := sufficientStatus(now.Add(-time.Minute), 1000)
	staleStatus.Conditions = []metav1.Condition{{Type: ballastv1.ConditionStale, Status: metav1.ConditionTrue, Reason: ballastv1.ReasonStoreReset}}
	cases := map[string]struct {
		store Store
		prev  *ballastv1.WorkloadProfileStatus
		res   recommend.Result
		want  bool
	}{
		"wiped: epoch newer than the history, samples gone": {epochStore{epoch: now}, history, result(false, 3), true},
		"still sufficient from the store":                   {epochStore{epoch: now}, history, result(true, 3), false},
		"samples kept (e.g. a policy change or an upgrade)": {epochStore{epoch: now}, history, result(false, 990), false},
		"epoch older than the history (data expired)":       {epochStore{epoch: now.Add(-48 * time.Hour)}, history, result(false, 0), false},
		"was accruing":                               {epochStore{epoch: now}, &ballastv1.WorkloadProfileStatus{State: ballastv1.StateAccruing}, result(false, 0), false},
		"epoch unreadable keeps serving":             {epochStore{err: errors.New("down")}, history, result(false, 0), true},
		"already stale stays stale until re-accrued": {epochStore{epoch: now}, staleStatus, result(false, 900), true},
		"already stale, re-accrued":                  {epochStore{epoch: now}, staleStatus, result(true, 900), false},
		"a store without an epoch":                   {fakeStoreWithoutEpoch{}, history, result(false, 0), false},
	}
	for name, tc := range cases {
		c := &Controller{store: tc.store}
		if got, _ := c.survivesReset(context.Background(), tc.prev, tc.res, now); got != tc.want {
			t.Errorf("%s: survivesReset = %v, want %v", name, got, tc.want)
		}
	}
}

type fakeStoreWithoutEpoch struct{}

func (fakeStoreWithoutEpoch) Read(context.Context, string, time.Time, time.Duration) (Series, error) {
	return Series{}, nil
}
func (fakeStoreWithoutEpoch) Purge(context.Context, string) error { return nil }

func TestKeepThroughReset(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	prev := sufficientStatus(now.Add(-time.Minute), 1000)
	next := prev.DeepCopy()
	next.Containers, next.State, next.MeetsThreshold = nil, ballastv1.StateAccruing, false
	res := result(false, 2)
	res.Ready = metav1.Condition{Type: ballastv1.ConditionReady, Status: metav1.ConditionTrue, Reason: ballastv1.ReasonSamplesCollected}
	keepThroughReset(prev, next, res, now, 1, now)
	if next.State != ballastv1.StateSufficient || !next.MeetsThreshold || next.Containers[0].Recommendations["cpu"].Request != "300m" {
		t.Fatalf("recommendations not kept: %+v", next)
	}
	var stale, ready bool
	for _, c := range next.Conditions {
		stale = stale || c.Type == ballastv1.ConditionStale && c.Status == metav1.ConditionTrue && c.Reason == ballastv1.ReasonStoreReset
		ready = ready || c.Type == ballastv1.ConditionReady
	}
	if !stale || !ready {
		t.Errorf("conditions %+v: want Stale=True/StoreReset and the fresh Ready", next.Conditions)
	}
	if !clearStale(next) || clearStale(next) {
		t.Error("clearStale must remove the condition once")
	}
}
