package resize

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
)

// takes is a Relocator that takes every pod (the real one is Understudy's).
type takes struct{ n int }

func (t *takes) Relocate(context.Context, *corev1.Pod, corev1.ResourceList, string) (bool, error) {
	t.n++
	return true, nil
}

func relocPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-a",
		Annotations: map[string]string{ballastv1.PolicyRefAnnotation: "team/p", ballastv1.ProfileRefAnnotation: "prof"}}}
}

func TestRelocatedRecordsEventAndOutcome(t *testing.T) {
	rec := record.NewFakeRecorder(4)
	m := NewMetrics(prometheus.NewRegistry(), nil)
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: "prof"},
		Status: ballastv1.WorkloadProfileStatus{PolicyRef: &ballastv1.PolicyRef{Kind: "ResourcePolicy", Namespace: "team", Name: "q"}}}
	c := New(clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0)), fakeClient(t, wp), nil, config.NewState(nil), nil, m, events.New(rec), logr.Discard(), Options{})
	c.Relocated(context.Background(), relocPod(), "web-b", "n2")
	// The policy attribute is the profile's status.policyRef (team/q), not the pod's
	// annotation (team/p).
	if n := testutil.ToFloat64(m.Outcome.WithLabelValues(OutcomeRelocated, "team/q", "team", "prof")); n != 1 {
		t.Errorf("outcome{relocated, team/q, prof} = %v, want 1", n)
	}
	ev := <-rec.Events
	if !strings.HasPrefix(ev, "Normal Relocated ") || !strings.Contains(ev, "web-b") || !strings.Contains(ev, "n2") {
		t.Errorf("event %q", ev)
	}
	// A pod naming a profile that does not exist adds no series of its own.
	forged := relocPod()
	forged.Annotations[ballastv1.ProfileRefAnnotation] = "no-such-profile"
	c.Relocated(context.Background(), forged, "web-c", "n2")
	if n := testutil.ToFloat64(m.Outcome.WithLabelValues(OutcomeRelocated, "", "team", "")); n != 1 {
		t.Errorf("outcome{relocated, unknown profile} = %v, want 1", n)
	}
}

func TestRelocateRung(t *testing.T) {
	ctx := context.Background()
	m := NewMetrics(prometheus.NewRegistry(), nil)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	c := New(clk, nil, nil, config.NewState(nil), nil, m, nil, logr.Discard(), Options{})
	if took, err := c.relocate(ctx, relocPod(), nil, "x"); took || err != nil {
		t.Errorf("no Relocator: took %v, %v", took, err)
	}
	r := &takes{}
	c = New(clk, nil, nil, config.NewState(nil), nil, m, nil, logr.Discard(), Options{Relocator: r})
	if took, err := c.relocate(ctx, relocPod(), nil, "x"); !took || err != nil || r.n != 1 {
		t.Errorf("with a Relocator: took %v, %v, calls %d", took, err, r.n)
	}
	dry := New(clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0)), nil, nil, config.NewState(nil), nil, NewMetrics(prometheus.NewRegistry(), nil), nil,
		logr.Discard(), Options{DryRun: true, Relocator: r})
	if took, _ := dry.relocate(ctx, relocPod(), nil, "x"); !took || r.n != 1 {
		t.Errorf("dry-run: took %v, Relocator called %d times (want not called)", took, r.n)
	}
}
