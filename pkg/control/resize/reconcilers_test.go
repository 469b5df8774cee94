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
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// newTestController is the controller over a fake client and a fake clock, with events
// kept in rec.
func newTestController(c client.Client, rec record.EventRecorder) (*Controller, *Metrics) {
	m := NewMetrics(prometheus.NewRegistry(), nil)
	return New(clocktesting.NewFakePassiveClock(t0), c, c, config.NewState(nil), resolve.New(c), m, events.New(rec),
		logr.Discard(), Options{}), m
}

// TestProfilePassGating: a profile that cannot resize is skipped once, counted with its
// reason and empty policy and namespace, and evaluated again after ProfileRetry (§8.1).
func TestProfilePassGating(t *testing.T) {
	profile := func(ready bool, ref *ballastv1.PolicyRef) *ballastv1.WorkloadProfile {
		wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		wp.Status.MeetsThreshold, wp.Status.PolicyRef = ready, ref
		return wp
	}
	cases := map[string]struct {
		wp   *ballastv1.WorkloadProfile
		want string
	}{
		"not ready":          {profile(false, nil), ReasonNotReady},
		"no policyRef":       {profile(true, nil), ReasonNoPolicy},
		"the policy is gone": {profile(true, &ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "gone"}), ReasonNoPolicy},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fakeClient(t, tc.wp)
			ctl, m := newTestController(c, nil)
			res, err := ctl.ProfilePass().Reconcile(context.Background(), tc.wp)
			if err != nil {
				t.Fatal(err)
			}
			if res != (reconcile.Result{RequeueAfter: 15 * time.Minute}) {
				t.Errorf("result %+v, want a requeue after the 15m profile retry", res)
			}
			if n := testutil.ToFloat64(m.Skipped.WithLabelValues(tc.want, "", "", "web")); n != 1 {
				t.Errorf("skipped{reason=%q} = %v, want 1", tc.want, n)
			}
		})
	}
}

// TestPodOutcomesCompleted: a Pending resize whose generation the kubelet has observed with
// neither resize condition is Completed: the state is written with its -since from the
// clock, one ResizeCompleted event, one outcome count; a second pass records nothing more.
func TestPodOutcomesCompleted(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-a", Generation: 2,
		Labels:      map[string]string{ballastv1.ModeLabel: ballastv1.ModeResize},
		Annotations: map[string]string{ballastv1.ResizeStateAnnotation: ballastv1.ResizeStatePending}},
		Status: corev1.PodStatus{ObservedGeneration: 2}}
	c := fakeClient(t, pod)
	rec := record.NewFakeRecorder(4)
	ctl, m := newTestController(c, rec)
	for range 2 {
		got := &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
			t.Fatal(err)
		}
		if _, err := ctl.PodOutcomes().Reconcile(context.Background(), got); err != nil {
			t.Fatal(err)
		}
	}
	got := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if s := got.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateCompleted {
		t.Errorf("resize-state %q, want Completed", s)
	}
	if s := got.Annotations[ballastv1.ResizeStateSinceAnnotation]; s != t0.Format(time.RFC3339) {
		t.Errorf("resize-state-since %q, want the clock's %s", s, t0.Format(time.RFC3339))
	}
	if n := testutil.ToFloat64(m.Outcome.WithLabelValues("completed", "", "shop", "")); n != 1 {
		t.Errorf("outcome{completed} = %v, want 1", n)
	}
	close(rec.Events)
	var evs []string
	for e := range rec.Events {
		evs = append(evs, e)
	}
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Normal ResizeCompleted ") {
		t.Errorf("events %q, want one ResizeCompleted", evs)
	}
}
