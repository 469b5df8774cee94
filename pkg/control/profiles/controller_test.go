package profiles

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/logging"
)

// fakeStore stands in for the Valkey-backed store.ProfileReader in unit tests: it serves
// fixed series and records purges. The real store is exercised in test/integration.
type fakeStore struct {
	series Series
	purged []string
}

func (s *fakeStore) Read(context.Context, string, time.Time, time.Duration) (Series, error) {
	return s.series, nil
}

func (s *fakeStore) Purge(_ context.Context, hash string) error {
	s.purged = append(s.purged, hash)
	return nil
}

// fixture runs the profiles controller over controller-runtime's fake client (in-memory,
// unit tests only) and a fake clock.
type fixture struct {
	c     client.Client
	clock *clocktesting.FakeClock
	store *fakeStore
	m     *Metrics
	ctrl  *Controller
	logs  *bytes.Buffer
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cfg := &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app"}, OrphanTTL: "1h"}}
	f := &fixture{clock: clocktesting.NewFakeClock(epoch), store: &fakeStore{}, logs: &bytes.Buffer{}}
	f.c = fake.NewClientBuilder().WithScheme(s).WithObjects(append(objs, cfg)...).
		WithStatusSubresource(&ballastv1.WorkloadProfile{}).
		WithIndex(&corev1.Pod{}, enrollment.ProfileRefIndex, func(o client.Object) []string {
			if ref := o.GetAnnotations()[ballastv1.ProfileRefAnnotation]; ref != "" {
				return []string{ref}
			}
			return nil
		}).Build()
	state := config.NewState(nil)
	log := logging.New("info", "json", f.logs)
	if err := config.New(f.clock, f.c, state, config.NewMetrics(prometheus.NewRegistry()), "ballast-system", log).Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.m = NewMetrics(prometheus.NewRegistry())
	f.ctrl = New(f.clock, f.c, state, resolve.New(f.c), f.store, f.m, log)
	return f
}

func (f *fixture) get(t *testing.T, name string) *ballastv1.WorkloadProfile {
	t.Helper()
	wp := &ballastv1.WorkloadProfile{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: name}, wp); err != nil {
		t.Fatal(err)
	}
	return wp
}

func (f *fixture) reconcile(t *testing.T, name string) time.Duration {
	t.Helper()
	res, err := f.ctrl.Reconcile(context.Background(), f.get(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return res.RequeueAfter
}

func profile(name, hash string) *ballastv1.WorkloadProfile {
	return &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{ballastv1.ProfileFinalizer}},
		Status: ballastv1.WorkloadProfileStatus{MeasurementHash: hash, TupleLabels: map[string]string{"app": "shop"}}}
}

func boundPod(name, profile, mode string, ann map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team",
		Labels: map[string]string{"app": "shop"}, Annotations: map[string]string{ballastv1.ProfileRefAnnotation: profile}}}
	if mode != "" {
		p.Labels[ballastv1.ModeLabel] = mode
	}
	for k, v := range ann {
		p.Annotations[k] = v
	}
	return p
}

func TestCountsPodsWorkloadsAndResizeStates(t *testing.T) {
	since := "2026-01-01T00:00:00Z"
	f := newFixture(t, profile("shop", "h1"),
		boundPod("a", "shop", ballastv1.ModeResize, map[string]string{ballastv1.ResizeStateAnnotation: ballastv1.ResizeStateDeferred,
			ballastv1.ResizeStateSinceAnnotation: since}),
		boundPod("b", "shop", ballastv1.ModeResize, map[string]string{ballastv1.ResizeStateAnnotation: ballastv1.ResizeStateInfeasible}),
		boundPod("c", "shop", "", nil), // left the ladder: not counted
		boundPod("d", "other", ballastv1.ModeMeasure, nil))
	f.reconcile(t, "shop")
	st := f.get(t, "shop").Status
	if st.ActivePods != 2 || st.ActiveWorkloads != 2 {
		t.Errorf("activePods=%d activeWorkloads=%d, want 2 and 2 (bare pods are their own workloads)", st.ActivePods, st.ActiveWorkloads)
	}
	if st.Resize.DeferredPods != 1 || st.Resize.InfeasiblePods != 1 || st.Resize.OldestDeferredSince == nil ||
		st.Resize.OldestDeferredSince.UTC().Format(time.RFC3339) != since {
		t.Errorf("resize summary = %+v", st.Resize)
	}
	if meta.FindStatusCondition(st.Conditions, ballastv1.ConditionOrphaned) != nil {
		t.Error("a profile with pods is Orphaned")
	}
	if got := testutil.CollectAndCount(f.m.Info); got != 1 {
		t.Errorf("ballast_profile_info series = %d, want 1", got)
	}
}

// TestOrphanTTLDeletesAndPurges walks a profile without pods through Orphaned, the TTL
// wait, deletion and the finalizer's purge, on the fake clock.
func TestOrphanTTLDeletesAndPurges(t *testing.T) {
	f := newFixture(t, profile("lonely", "h1"))
	if requeue := f.reconcile(t, "lonely"); requeue != time.Hour {
		t.Errorf("requeue = %v, want the whole 1h TTL", requeue)
	}
	c := meta.FindStatusCondition(f.get(t, "lonely").Status.Conditions, ballastv1.ConditionOrphaned)
	if c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(epoch) {
		t.Fatalf("Orphaned = %+v, want True since the fake clock's now", c)
	}
	f.clock.Step(59 * time.Minute)
	if requeue := f.reconcile(t, "lonely"); requeue != time.Minute {
		t.Errorf("requeue = %v, want the remaining 1m", requeue)
	}
	f.clock.Step(time.Minute)
	f.reconcile(t, "lonely")
	wp := f.get(t, "lonely") // the finalizer holds it
	if wp.DeletionTimestamp.IsZero() {
		t.Fatal("not deleted at the TTL")
	}
	if _, err := f.ctrl.Reconcile(context.Background(), wp); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: "lonely"}, wp); !apierrors.IsNotFound(err) {
		t.Errorf("finalizer not removed: %v", err)
	}
	if len(f.store.purged) != 1 || f.store.purged[0] != "h1" {
		t.Errorf("purged %v, want [h1]", f.store.purged)
	}
	if testutil.ToFloat64(f.m.Purged) != 1 {
		t.Error("purge not counted")
	}
}

func TestSharedHashIsNotPurged(t *testing.T) {
	f := newFixture(t, profile("old", "h1"), profile("new", "h1"))
	if err := f.c.Delete(context.Background(), f.get(t, "old")); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "old")
	if len(f.store.purged) != 0 {
		t.Errorf("purged %v although profile new shares the hash", f.store.purged)
	}
}

// TestInvalidPolicyLoggedOncePerPolicy: profiles under an invalid policy get the
// PolicyInvalid condition, and the problem is logged once, not once per recompute.
func TestInvalidPolicyLoggedOncePerPolicy(t *testing.T) {
	bad := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: ballastv1.ResourcePolicySpec{Readiness: ballastv1.Readiness{MinTimeSpan: "forever"}}}
	a, b := profile("a", "h1"), profile("b", "h2")
	for _, wp := range []*ballastv1.WorkloadProfile{a, b} {
		wp.Status.PolicyRef = &ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "bad"}
	}
	f := newFixture(t, bad, a, b)
	for i := 0; i < 2; i++ {
		f.reconcile(t, "a")
		f.reconcile(t, "b")
	}
	c := meta.FindStatusCondition(f.get(t, "a").Status.Conditions, ballastv1.ConditionReady)
	if c == nil || c.Reason != ballastv1.ReasonPolicyInvalid {
		t.Fatalf("Ready = %+v, want PolicyInvalid", c)
	}
	if n := strings.Count(f.logs.String(), "policy cannot be computed"); n != 1 {
		t.Errorf("%d log lines for one broken policy over four recomputes, want 1:\n%s", n, f.logs.String())
	}
}
