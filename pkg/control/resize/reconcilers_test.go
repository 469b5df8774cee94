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
	"k8s.io/apimachinery/pkg/api/resource"
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
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
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

// oomStream is a profile's OOM stream holding recs (read from the start only).
type oomStream struct {
	recs  []store.OOMRecord
	reads int
}

func (s *oomStream) ReadOOM(_ context.Context, _, afterID string) ([]store.OOMRecord, error) {
	s.reads++
	if afterID != "" {
		return nil, nil
	}
	return s.recs, nil
}

// TestFastRaiseRefusals: one tick reads the OOM stream of the profile with a Running
// resize-mode pod and decides the raises that need no node pass; each kill is counted once
// with its result, and the next tick (after the last entry) counts nothing more.
func TestFastRaiseRefusals(t *testing.T) {
	limited := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: bytes(128 << 20)},
		Limits: corev1.ResourceList{corev1.ResourceMemory: bytes(1 << 30)}}
	unlimited := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: bytes(128 << 20)}}
	cases := map[string]struct {
		resources corev1.ResourceRequirements
		kind      string
		peak      int64
		want      string
	}{
		"a node-level kill is not the container's": {limited, "node", 900 << 20, "not_container"},
		"no memory limit to raise":                 {unlimited, "container", 900 << 20, "no_limit"},
		"the limit is above the OOM bump already":  {limited, "container", 100 << 20, "already_raised"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-a", UID: "u1",
				Labels:      map[string]string{ballastv1.ModeLabel: ballastv1.ModeResize},
				Annotations: map[string]string{ballastv1.ProfileRefAnnotation: "web"}},
				Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Resources: tc.resources}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
			wp.Status.MeasurementHash = "h1"
			s := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(s)
			_ = ballastv1.AddToScheme(s)
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(pod, wp).
				WithIndex(&corev1.Pod{}, enrollment.ModeIndex, func(o client.Object) []string {
					return []string{o.GetLabels()[ballastv1.ModeLabel]}
				}).Build()
			src := &oomStream{recs: []store.OOMRecord{{ID: "1-0", Event: series.OOMEvent{Container: "app", Pod: "shop/web-a",
				Node: "n1", At: t0.Add(-10 * time.Second), PeakBytes: tc.peak, LimitBytes: 1 << 30, Kind: tc.kind}}}}
			m := NewMetrics(prometheus.NewRegistry(), nil)
			ctl := New(clocktesting.NewFakePassiveClock(t0), c, c, config.NewState(nil), resolve.New(c), m, nil,
				logr.Discard(), Options{OOM: src})
			for range 2 {
				if err := ctl.FastRaise().Reconcile(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if src.reads != 2 {
				t.Errorf("the stream was read %d times in two ticks", src.reads)
			}
			for _, r := range []string{"not_container", "no_limit", "already_raised", "sent"} {
				want := 0.0
				if r == tc.want {
					want = 1
				}
				if n := testutil.ToFloat64(m.Raises.WithLabelValues("oom", r)); n != want {
					t.Errorf("raises{oom,%s} = %v, want %v", r, n, want)
				}
			}
		})
	}
}

// TestFastRaiseSent: a container kill above the OOM bump's reach raises the memory limit in
// place through pods/resize in the same tick (no interval, no cooldown), on a node with room:
// the limit becomes max(peak × 1.2, peak + 100Mi), the request is kept (Burstable stays
// Burstable), one Raised event, one "sent" count, and the next tick raises nothing more.
func TestFastRaiseSent(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-a", UID: "u1",
		Labels:      map[string]string{ballastv1.ModeLabel: ballastv1.ModeResize},
		Annotations: map[string]string{ballastv1.ProfileRefAnnotation: "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: bytes(128 << 20)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: bytes(1 << 30)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	wp.Status.MeasurementHash = "h1"
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = ballastv1.AddToScheme(s)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(pod, node, wp).
		WithIndex(&corev1.Pod{}, enrollment.ModeIndex, func(o client.Object) []string {
			return []string{o.GetLabels()[ballastv1.ModeLabel]}
		}).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
			return []string{o.(*corev1.Pod).Spec.NodeName}
		}).Build()
	const peak = 1000 << 20
	src := &oomStream{recs: []store.OOMRecord{{ID: "1-0", Event: series.OOMEvent{Container: "app", Pod: "shop/web-a",
		Node: "n1", At: t0.Add(-10 * time.Second), PeakBytes: peak, LimitBytes: 1 << 30, Kind: "container"}}}}
	rec := record.NewFakeRecorder(8)
	m := NewMetrics(prometheus.NewRegistry(), nil)
	ctl := New(clocktesting.NewFakePassiveClock(t0), c, c, config.NewState(nil), resolve.New(c), m, events.New(rec),
		logr.Discard(), Options{OOM: src})
	for range 2 {
		if err := ctl.FastRaise().Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	got := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	res := got.Spec.Containers[0].Resources
	wantLim := int64(peak * 6 / 5) // peak × 1.2 > peak + 100Mi at this peak
	if l := res.Limits[corev1.ResourceMemory]; l.Value() != wantLim {
		t.Errorf("memory limit %s (%d), want %d", l.String(), l.Value(), wantLim)
	}
	if r := res.Requests[corev1.ResourceMemory]; r.Value() != 128<<20 {
		t.Errorf("memory request %s, want it kept at 128Mi", r.String())
	}
	if n := testutil.ToFloat64(m.Raises.WithLabelValues("oom", "sent")); n != 1 {
		t.Errorf("raises{oom,sent} = %v, want 1", n)
	}
	close(rec.Events)
	var raised int
	for e := range rec.Events {
		if strings.Contains(e, "OOM-killed") {
			raised++
		}
	}
	if raised != 1 {
		t.Errorf("%d raise events, want 1", raised)
	}
}
