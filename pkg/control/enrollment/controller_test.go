package enrollment

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
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/logging"
)

const ns = "ballast-system"

// fixture runs the enrollment controller over controller-runtime's fake client
// (in-memory, unit tests only), which serves as both the cache and the live reader.
type fixture struct {
	c     client.Client
	ctrl  *Controller
	m     *Metrics
	kill  *config.Metrics
	cfg   *config.Controller
	state *config.State
	logs  *bytes.Buffer
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
	objs = append(objs,
		&ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
			Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app"}, OrphanTTL: "1h"}},
		&ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	f := &fixture{logs: &bytes.Buffer{}}
	f.c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&ballastv1.WorkloadProfile{}).Build()
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	reg := prometheus.NewRegistry()
	f.kill = config.NewMetrics(reg)
	f.state = config.NewState(f.kill)
	log := logging.New("info", "json", f.logs)
	f.cfg = config.New(clk, f.c, f.state, f.kill, ns, log)
	f.syncConfig(t)
	f.m = NewMetrics(reg)
	f.ctrl = New(clk, f.c, f.c, f.state, resolve.New(f.c), f.m, log.WithName("watcher"))
	return f
}

func (f *fixture) syncConfig(t *testing.T) {
	t.Helper()
	if err := f.cfg.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) reconcile(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	cur := &corev1.Pod{}
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ctrl.Reconcile(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
		t.Fatal(err)
	}
	return cur
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

func pod(name, mode string) *corev1.Pod {
	labels := map[string]string{"app": "shop"}
	if mode != "" {
		labels[ballastv1.ModeLabel] = mode
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: labels}}
}

func TestBindCreatesProfileAndStamps(t *testing.T) {
	p := pod("web", ballastv1.ModeMeasure)
	f := newFixture(t, p)
	got := f.reconcile(t, p)
	ref := got.Annotations[ballastv1.ProfileRefAnnotation]
	if ref == "" || got.Annotations[ballastv1.PolicyRefAnnotation] != "default" {
		t.Fatalf("annotations = %v", got.Annotations)
	}
	wp := &ballastv1.WorkloadProfile{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: ref}, wp); err != nil {
		t.Fatal(err)
	}
	if wp.Status.MeasurementHash == "" || wp.Status.PolicyRef == nil || wp.Status.PolicyRef.Name != "default" ||
		wp.Status.TupleLabels["app"] != "shop" {
		t.Errorf("profile identity = %+v", wp.Status)
	}
	if testutil.ToFloat64(f.m.ProfilesCreated) != 1 || testutil.ToFloat64(f.m.PodsProcessed.WithLabelValues(EventCreated, "team", ref)) != 1 {
		t.Errorf("counters: created=%v", testutil.ToFloat64(f.m.ProfilesCreated))
	}
	// Reconciling again changes nothing and counts nothing.
	f.reconcile(t, p)
	if testutil.ToFloat64(f.m.PodsProcessed.WithLabelValues(EventCreated, "team", ref)) != 1 {
		t.Error("second reconcile counted the pod again")
	}
}

func TestUnenrollRemovesBookkeeping(t *testing.T) {
	p := pod("web", ballastv1.ModeApply)
	f := newFixture(t, p)
	ref := f.reconcile(t, p).Annotations[ballastv1.ProfileRefAnnotation]
	cur := &corev1.Pod{}
	_ = f.c.Get(context.Background(), client.ObjectKeyFromObject(p), cur)
	delete(cur.Labels, ballastv1.ModeLabel)
	if err := f.c.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	got := f.reconcile(t, p)
	if _, ok := got.Annotations[ballastv1.ProfileRefAnnotation]; ok {
		t.Errorf("still stamped: %v", got.Annotations)
	}
	if testutil.ToFloat64(f.m.PodsProcessed.WithLabelValues(EventUnenrolled, "team", ref)) != 1 {
		t.Error("un-enrollment not counted")
	}
}

// TestForgedProfileRefIsNotALabel: a profile-ref written on the pod by anyone who may patch
// it (here a random name no profile has) is corrected, and counted as unenrolled from
// profile "" rather than under the written name.
func TestForgedProfileRefIsNotALabel(t *testing.T) {
	p := pod("web", ballastv1.ModeMeasure)
	p.Annotations = map[string]string{ballastv1.ProfileRefAnnotation: "x7f3a9c1-forged"}
	f := newFixture(t, p)
	got := f.reconcile(t, p)
	if ref := got.Annotations[ballastv1.ProfileRefAnnotation]; ref == "x7f3a9c1-forged" || ref == "" {
		t.Fatalf("profile-ref = %q, want the pod's own profile", ref)
	}
	if n := testutil.ToFloat64(f.m.PodsProcessed.WithLabelValues(EventUnenrolled, "team", "")); n != 1 {
		t.Errorf(`unenrolled{profile=""} = %v, want 1`, n)
	}
	if n := testutil.CollectAndCount(f.m.PodsProcessed); n != 2 {
		t.Errorf("pods_processed has %d series, want 2 (created under the real profile, unenrolled under \"\")", n)
	}
}

// TestKillSwitchSuppressesStampAtWarn: SPEC §10.2, the stamp is not written, the pod is
// requeued, a warn line carries kill_switch and kill_switch_reason, and the suppression
// is counted.
func TestKillSwitchSuppressesStampAtWarn(t *testing.T) {
	p := pod("web", ballastv1.ModeMeasure)
	f := newFixture(t, p, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: ns}})
	f.syncConfig(t)
	cur := &corev1.Pod{}
	_ = f.c.Get(context.Background(), client.ObjectKeyFromObject(p), cur)
	res, err := f.ctrl.Reconcile(context.Background(), cur)
	if err != nil || res.RequeueAfter != requeueSuppressed {
		t.Fatalf("result %+v, %v", res, err)
	}
	_ = f.c.Get(context.Background(), client.ObjectKeyFromObject(p), cur)
	if _, ok := cur.Annotations[ballastv1.ProfileRefAnnotation]; ok {
		t.Error("pod stamped under the kill switch")
	}
	got := lines(t, f.logs, "not stamping pod")
	if len(got) != 1 || got[0]["level"] != "warn" || got[0]["kill_switch"] != true ||
		got[0]["kill_switch_reason"] != config.ReasonConfigMap || got[0]["action"] != "enroll" {
		t.Errorf("lines = %v", got)
	}
	if n := testutil.ToFloat64(f.kill.Suppressed.WithLabelValues(config.ActionEnroll)); n != 1 {
		t.Errorf("suppressed{enroll} = %v", n)
	}
}

func TestGoneCountsDeletedPods(t *testing.T) {
	f := newFixture(t)
	if _, err := f.ctrl.Gone(context.Background(), client.ObjectKey{Namespace: "team", Name: "gone"}); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(f.m.PodsProcessed.WithLabelValues(EventDeleted, "team", "")); n != 1 {
		t.Errorf("deleted = %v, want 1", n)
	}
}
