package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/logging"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// fixture runs the ClusterResourcePolicy controller over controller-runtime's fake client
// (in-memory, unit tests only) with a fake event recorder.
type fixture struct {
	c      client.Client
	ctrl   *Controller
	m      *Metrics
	events *record.FakeRecorder
	logs   *bytes.Buffer
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	f := &fixture{logs: &bytes.Buffer{}, events: record.NewFakeRecorder(16)}
	f.c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&ballastv1.ClusterResourcePolicy{}, &ballastv1.ResourcePolicy{}).Build()
	f.m = NewMetrics(prometheus.NewRegistry())
	f.ctrl = NewCluster(clocktesting.NewFakeClock(time.Unix(1e9, 0)), f.c, config.NewState(nil), f.m,
		events.New(f.events), logging.New("info", "json", f.logs))
	return f
}

// reconcile reads the policy back and reconciles it, as the work queue would.
func (f *fixture) reconcile(t *testing.T, name string) *ballastv1.ClusterResourcePolicy {
	t.Helper()
	p := &ballastv1.ClusterResourcePolicy{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ctrl.Reconcile(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fixture) update(t *testing.T, name string, mod func(*ballastv1.ResourcePolicySpec)) {
	t.Helper()
	p := &ballastv1.ClusterResourcePolicy{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	mod(&p.Spec)
	p.Generation++
	if err := f.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func lines(t *testing.T, b *bytes.Buffer, substr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, substr) {
			m := map[string]any{}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("log line not JSON: %q", l)
			}
			out = append(out, m)
		}
	}
	return out
}

func crp(name string, spec ballastv1.ResourcePolicySpec) *ballastv1.ClusterResourcePolicy {
	return &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}, Spec: spec}
}

func metricsSource(name string) *ballastv1.MetricsSource {
	return &ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: ballastv1.MetricsSourceSpec{Type: ballastv1.SourceTypeKubernetesMetrics}}
}

func cpu(src string) []ballastv1.MetricSpec {
	return []ballastv1.MetricSpec{{Resource: "cpu", Field: "request", Source: src, Aggregation: "p90"}}
}

func TestValidPolicy(t *testing.T) {
	f := newFixture(t, metricsSource("km"), crp("ok", ballastv1.ResourcePolicySpec{Metrics: cpu("km")}))
	p := f.reconcile(t, "ok")
	c := meta.FindStatusCondition(p.Status.Conditions, ballastv1.ConditionValid)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 || p.Status.ProfileDiscriminator == "" {
		t.Errorf("status = %+v", p.Status)
	}
	if f.logs.Len() != 0 || len(f.events.Events) != 0 {
		t.Errorf("a valid policy logged %q / recorded %d events", f.logs.String(), len(f.events.Events))
	}
}

// TestInvalidPolicyOncePerChange: an unparseable readiness value sets Valid=False, the
// gauge, one error line and one event; reconciling again adds nothing; fixing clears the
// gauge; breaking it again logs again.
func TestInvalidPolicyOncePerChange(t *testing.T) {
	f := newFixture(t, metricsSource("km"), crp("bad", ballastv1.ResourcePolicySpec{Metrics: cpu("km"),
		Readiness: ballastv1.Readiness{MaxCV: "lots"}}))
	p := f.reconcile(t, "bad")
	c := meta.FindStatusCondition(p.Status.Conditions, ballastv1.ConditionValid)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "InvalidNumber" || !strings.Contains(c.Message, "maxCV") {
		t.Fatalf("condition = %+v", c)
	}
	gauge := func() float64 {
		return testutil.ToFloat64(f.m.Invalid.WithLabelValues(ballastv1.KindClusterResourcePolicy, "", "bad", "InvalidNumber"))
	}
	if gauge() != 1 {
		t.Errorf("gauge = %v, want 1", gauge())
	}
	f.reconcile(t, "bad")
	got := lines(t, f.logs, "invalid policy")
	if len(got) != 1 || got[0]["level"] != "error" || got[0]["policy"] != "bad" || got[0]["reason"] != "InvalidNumber" {
		t.Fatalf("after two reconciles: %v, want one error line", got)
	}
	if len(f.events.Events) != 1 || !strings.Contains(<-f.events.Events, "Warning "+ReasonPolicyInvalid) {
		t.Errorf("want one %s event", ReasonPolicyInvalid)
	}
	f.update(t, "bad", func(s *ballastv1.ResourcePolicySpec) { s.Readiness.MaxCV = "0.5" })
	f.reconcile(t, "bad")
	if n := testutil.CollectAndCount(f.m.Invalid); n != 0 {
		t.Errorf("gauge series after the fix = %d, want 0", n)
	}
	f.update(t, "bad", func(s *ballastv1.ResourcePolicySpec) { s.Readiness.MaxCV = "lots" })
	f.reconcile(t, "bad")
	if got := lines(t, f.logs, "invalid policy"); len(got) != 2 {
		t.Errorf("after fix and re-break: %d lines, want 2", len(got))
	}
	if _, err := f.ctrl.Gone(context.Background(), client.ObjectKey{Name: "bad"}); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(f.m.Invalid); n != 0 {
		t.Errorf("gauge series after deletion = %d, want 0", n)
	}
}

func TestUnknownSourceIsInvalid(t *testing.T) {
	f := newFixture(t, metricsSource("km"), crp("p", ballastv1.ResourcePolicySpec{Metrics: cpu("nosuch")}))
	f.reconcile(t, "p")
	p := f.reconcile(t, "p")
	c := meta.FindStatusCondition(p.Status.Conditions, ballastv1.ConditionValid)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != policy.ReasonUnknownMetricsSource ||
		!strings.Contains(c.Message, "nosuch") {
		t.Errorf("Valid = %+v, want False %s naming nosuch", c, policy.ReasonUnknownMetricsSource)
	}
	got := lines(t, f.logs, "invalid policy")
	if len(got) != 1 || got[0]["reason"] != policy.ReasonUnknownMetricsSource || got[0]["policy"] != "p" {
		t.Fatalf("lines = %v, want one error line", got)
	}
	if len(f.events.Events) != 1 || !strings.Contains(<-f.events.Events, "Warning "+ReasonPolicyInvalid) {
		t.Errorf("want one %s event", ReasonPolicyInvalid)
	}
	// The source appears: valid; it disappears again: invalid and reported again.
	if err := f.c.Create(context.Background(), metricsSource("nosuch")); err != nil {
		t.Fatal(err)
	}
	if p := f.reconcile(t, "p"); !meta.IsStatusConditionTrue(p.Status.Conditions, ballastv1.ConditionValid) {
		t.Errorf("still invalid once the source exists: %+v", p.Status.Conditions)
	}
	if err := f.c.Delete(context.Background(), metricsSource("nosuch")); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "p")
	if got := lines(t, f.logs, "invalid policy"); len(got) != 2 {
		t.Errorf("%d error lines, want 2", len(got))
	}
}

func TestMinTimeSpanBeyondRetentionWarns(t *testing.T) {
	f := newFixture(t, metricsSource("km"), crp("slow", ballastv1.ResourcePolicySpec{Metrics: cpu("km"),
		Readiness: ballastv1.Readiness{MinTimeSpan: "400h"}}))
	f.reconcile(t, "slow")
	f.reconcile(t, "slow")
	if got := lines(t, f.logs, "minTimeSpan is longer"); len(got) != 1 || got[0]["level"] != "warn" {
		t.Errorf("lines = %v, want one warn", got)
	}
}

// configured returns a state holding a BallastConfig with spec, as the config controller
// publishes it.
func configured(t *testing.T, spec ballastv1.BallastConfigSpec) *config.State {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(&ballastv1.BallastConfig{
		ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName}, Spec: spec}).Build()
	state := config.NewState(nil)
	if err := config.New(clocktesting.NewFakeClock(time.Unix(1e9, 0)), c, state, nil, "ballast-system",
		logging.New("error", "json", &bytes.Buffer{})).Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	return state
}

// TestNeverReadyReadsTheCompiledPolicy: the "never ready" warning compares the retention
// window with the minTimeSpan every reader uses (policy.Compile: the 24h default for a blank
// value, a ResourcePolicy's raised to the cluster's floor), not with the written string, so
// a blank minTimeSpan under a 12h retention warns too.
func TestNeverReadyReadsTheCompiledPolicy(t *testing.T) {
	cases := map[string]struct {
		retention   string // BallastConfig spec.retentionWindow; "" is the 168h default
		minTimeSpan string
		namespaced  bool
		floor       string // spec.policyFloors.minTimeSpan
		want        string // the event's "<minTimeSpan> is longer than … <retention>"; "" for none
	}{
		"a blank minTimeSpan under a 12h retention is the 24h default": {retention: "12h",
			want: "readiness.minTimeSpan 24h is longer than the retention window 12h0m0s"},
		"a blank minTimeSpan under the default retention": {},
		"a written minTimeSpan within the retention":      {retention: "12h", minTimeSpan: "6h"},
		"a written minTimeSpan beyond the default retention": {minTimeSpan: "400h",
			want: "readiness.minTimeSpan 400h is longer than the retention window 168h0m0s"},
		"a ResourcePolicy's blank minTimeSpan raised to the floor": {retention: "26h", namespaced: true, floor: "30h",
			want: "readiness.minTimeSpan 30h is longer than the retention window 26h0m0s"},
		"a ResourcePolicy's blank minTimeSpan under the floor's retention": {retention: "26h", namespaced: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := ballastv1.ResourcePolicySpec{Metrics: cpu("km"), Readiness: ballastv1.Readiness{MinTimeSpan: tc.minTimeSpan}}
			f := newFixture(t, metricsSource("km"))
			state := configured(t, ballastv1.BallastConfigSpec{IdentityLabels: []string{"app"}, RetentionWindow: tc.retention,
				PolicyFloors: ballastv1.PolicyFloors{MinTimeSpan: tc.floor}})
			clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
			log := logging.New("info", "json", f.logs)
			var ctrl *Controller
			var obj client.Object
			if tc.namespaced {
				ctrl = NewNamespaced(clk, f.c, state, f.m, events.New(f.events), log)
				obj = &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", Generation: 1}, Spec: spec}
			} else {
				ctrl = NewCluster(clk, f.c, state, f.m, events.New(f.events), log)
				obj = crp("p", spec)
			}
			if err := f.c.Create(context.Background(), obj); err != nil {
				t.Fatal(err)
			}
			for range 2 { // reported once per change
				if _, err := ctrl.Reconcile(context.Background(), obj); err != nil {
					t.Fatal(err)
				}
			}
			warned := lines(t, f.logs, "minTimeSpan is longer")
			var got []string
			for len(f.events.Events) > 0 {
				if e := <-f.events.Events; strings.Contains(e, ReasonNeverReady) {
					got = append(got, e)
				}
			}
			if tc.want == "" {
				if len(warned) != 0 || len(got) != 0 {
					t.Errorf("warned %v, events %v; want neither", warned, got)
				}
				return
			}
			if len(warned) != 1 || warned[0]["level"] != "warn" {
				t.Errorf("lines = %v, want one warn", warned)
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Errorf("events = %v, want one with %q", got, tc.want)
			}
		})
	}
}

func TestNamespacedPolicyNamedWithItsNamespace(t *testing.T) {
	f := newFixture(t, metricsSource("km"))
	rp := &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "team", Generation: 1},
		Spec: ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{{Resource: "gpu", Field: "request", Source: "km", Aggregation: "p90"}}}}
	if err := f.c.Create(context.Background(), rp); err != nil {
		t.Fatal(err)
	}
	ctrl := NewNamespaced(clocktesting.NewFakeClock(time.Unix(1e9, 0)), f.c, config.NewState(nil), f.m, nil, logging.New("info", "json", f.logs))
	obj := ctrl.NewObject()
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(rp), obj); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.Reconcile(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	got := lines(t, f.logs, "invalid policy")
	if len(got) != 1 || got[0]["policy"] != "team/bad" || got[0]["kind"] != ballastv1.KindResourcePolicy || got[0]["reason"] != "InvalidResource" {
		t.Errorf("lines = %v", got)
	}
	if n := testutil.ToFloat64(f.m.Invalid.WithLabelValues(ballastv1.KindResourcePolicy, "team", "bad", "InvalidResource")); n != 1 {
		t.Errorf("gauge = %v", n)
	}
}
