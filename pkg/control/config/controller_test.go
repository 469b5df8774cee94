package config

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/logging"
)

const ns = "ballast-system"

// fixture is the controller over controller-runtime's fake client (an in-memory object
// store standing in for the API server cache in unit tests).
type fixture struct {
	c       client.Client
	ctrl    *Controller
	state   *State
	metrics *Metrics
	logs    *bytes.Buffer
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	f := &fixture{c: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build(), logs: &bytes.Buffer{}}
	f.metrics = NewMetrics(prometheus.NewRegistry())
	f.state = NewState(f.metrics)
	f.ctrl = New(clocktesting.NewFakeClock(time.Unix(0, 0)), f.c, f.state, f.metrics, ns, logging.New("debug", "json", f.logs))
	return f
}

func (f *fixture) reconcile(t *testing.T) {
	t.Helper()
	if err := f.ctrl.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// lines returns the JSON log lines whose msg contains substr.
func lines(t *testing.T, b *bytes.Buffer, substr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(b.String(), "\n") {
		if !strings.Contains(l, substr) {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

func TestKillSwitchReasonsAndTransitions(t *testing.T) {
	cfg := &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app"}, OrphanTTL: "1h"}}
	f := newFixture(t, cfg)
	ctx := context.Background()
	f.reconcile(t)
	if f.state.Get().Active() || f.state.Get().Config == nil {
		t.Fatalf("state = %+v, want config and no kill switch", f.state.Get())
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: ns}}
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"ConfigMap created", func() error { return f.c.Create(ctx, cm) }, ReasonConfigMap},
		{"suspended too", func() error { cfg.Spec.Suspended = true; return f.c.Update(ctx, cfg) }, ReasonBoth},
		{"ConfigMap deleted", func() error { return f.c.Delete(ctx, cm) }, ReasonSuspended},
		{"released", func() error { cfg.Spec.Suspended = false; return f.c.Update(ctx, cfg) }, ""},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t)
		if got := f.state.Get().KillSwitch; got != s.want {
			t.Fatalf("%s: reason %q, want %q", s.name, got, s.want)
		}
	}
	if got := testutil.ToFloat64(f.metrics.Transitions.WithLabelValues("activated")); got != 1 {
		t.Errorf("activations = %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.metrics.Transitions.WithLabelValues("deactivated")); got != 1 {
		t.Errorf("deactivations = %v, want 1", got)
	}
	for _, r := range []string{ReasonConfigMap, ReasonBoth, ReasonSuspended} {
		if got := testutil.ToFloat64(f.metrics.Active.WithLabelValues(r)); got != 0 {
			t.Errorf("active{reason=%q} = %v after release, want 0", r, got)
		}
	}
	if got := lines(t, f.logs, "Kill switch activated"); len(got) != 1 || got[0]["kill_switch_reason"] != ReasonConfigMap {
		t.Errorf("activation lines = %v", got)
	}
}

func TestConfigProblemsLoggedOncePerChange(t *testing.T) {
	cfg := &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app"}, OrphanTTL: "soon", RetentionWindow: "a week"}}
	f := newFixture(t, cfg)
	f.reconcile(t)
	f.reconcile(t) // unchanged: nothing new
	if got := lines(t, f.logs, "unusable retentionWindow"); len(got) != 1 || got[0]["level"] != "warn" || got[0]["retentionWindow"] != "a week" {
		t.Errorf("retentionWindow lines = %v, want one warn", got)
	}
	if got := lines(t, f.logs, "unparseable orphanTTL"); len(got) != 1 || got[0]["level"] != "error" {
		t.Errorf("orphanTTL lines = %v, want one error", got)
	}
	// Fixed, then broken the same way again: logged again.
	cfg.Spec.OrphanTTL = "1h"
	if err := f.c.Update(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	cfg.Spec.OrphanTTL = "soon"
	if err := f.c.Update(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	if got := lines(t, f.logs, "unparseable orphanTTL"); len(got) != 2 {
		t.Errorf("orphanTTL lines after fix and re-break = %d, want 2", len(got))
	}
}

func TestSuppressLogsWarnAndCounts(t *testing.T) {
	var buf bytes.Buffer
	m := NewMetrics(prometheus.NewRegistry())
	s := NewState(m)
	s.Suppress(logging.New("warn", "json", &buf).WithName("watcher"), Snapshot{KillSwitch: ReasonConfigMap}, ActionEnroll, "kill switch active, not stamping pod", "pod", "a/b")
	got := lines(t, &buf, "not stamping")
	if len(got) != 1 {
		t.Fatalf("lines = %q", buf.String())
	}
	want := map[string]any{"level": "warn", "kill_switch": true, "kill_switch_reason": ReasonConfigMap, "action": "enroll", "pod": "a/b"}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v", k, got[0][k], v)
		}
	}
	if n := testutil.ToFloat64(m.Suppressed.WithLabelValues(ActionEnroll)); n != 1 {
		t.Errorf("suppressed{enroll} = %v, want 1", n)
	}
}
