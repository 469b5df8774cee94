package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/logging"
)

const operatorNS = "ballast-system"

// fixture is the admission handler over controller-runtime's fake client standing in for
// the manager's cache (unit tests only; test/integration/control drives the webhook
// through a real API server over TLS).
type fixture struct {
	c     client.Client
	h     *Handler
	m     *Metrics
	kill  *config.Metrics
	state *config.State
	cfg   *config.Controller
	logs  *bytes.Buffer
	// failGet and failList, when set, fail (or panic in) the cache reads they choose: the
	// fail-open tests' fault injection.
	failGet  func(client.Object) error
	failList func(client.ObjectList) error
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
	f := &fixture{logs: &bytes.Buffer{}}
	// The policies of these tests read the MetricsSource "km"; one naming no existing
	// source would govern no pod.
	km := &ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "km"},
		Spec: ballastv1.MetricsSourceSpec{Type: ballastv1.SourceTypeKubernetesMetrics}}
	// The requests' namespace exists (metrics label only namespaces that do).
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	f.c = fake.NewClientBuilder().WithScheme(s).WithObjects(append(objs, km, team)...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if f.failGet != nil {
				if err := f.failGet(obj); err != nil {
					return err
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if f.failList != nil {
				if err := f.failList(list); err != nil {
					return err
				}
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	reg := prometheus.NewRegistry()
	f.kill = config.NewMetrics(reg)
	f.state = config.NewState(f.kill)
	log := logging.New("info", "json", f.logs)
	f.cfg = config.New(clocktesting.NewFakeClock(metav1.Now().Time), f.c, f.state, f.kill, operatorNS, log)
	f.sync(t)
	f.m = NewMetrics(reg, metrics.NewShared(reg))
	f.h = New(f.c, s, f.state, resolve.New(f.c), f.m, false, log.WithName("webhook"))
	return f
}

func (f *fixture) sync(t *testing.T) {
	t.Helper()
	if err := f.cfg.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func ballastConfig() *ballastv1.BallastConfig {
	return &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app"}, OrphanTTL: "1h"}}
}

func defaultPolicy() *ballastv1.ClusterResourcePolicy {
	return &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{
			{Resource: "cpu", Field: "request", Source: "km", Aggregation: "avg"}}}}
}

func request(t *testing.T, mode string) admission.Request {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Labels: map[string]string{"app": "shop", ballastv1.ModeLabel: mode}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "i",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create,
		Namespace: "team", Name: "web", Object: runtime.RawExtension{Raw: raw}}}
}

// patches maps each JSON-patch path to its value.
func patches(resp admission.Response) map[string]any {
	out := map[string]any{}
	for _, p := range resp.Patches {
		out[p.Path] = p.Value
	}
	return out
}

func (f *fixture) mutations(result string) float64 {
	return testutil.ToFloat64(f.m.WebhookMutations.WithLabelValues(result, "team"))
}

func TestDecisions(t *testing.T) {
	cases := map[string]struct {
		objs        []client.Object
		mode        string
		allowed     bool
		result      string
		wantPatched bool
	}{
		"an invalid mode is denied":           {objs: []client.Object{ballastConfig()}, mode: "bogus", result: ResultDenied},
		"without BallastConfig nothing known": {mode: ballastv1.ModeApply, allowed: true, result: ResultNotAvailable},
		"measure is stamped only":             {objs: []client.Object{ballastConfig(), defaultPolicy()}, mode: ballastv1.ModeMeasure, allowed: true, result: ResultSkipped, wantPatched: true},
		"apply without a profile is stamped":  {objs: []client.Object{ballastConfig(), defaultPolicy()}, mode: ballastv1.ModeApply, allowed: true, result: ResultSkipped, wantPatched: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.objs...)
			resp := f.h.Handle(context.Background(), request(t, tc.mode))
			if resp.Allowed != tc.allowed {
				t.Errorf("allowed = %v, want %v (%v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if f.mutations(tc.result) != 1 {
				t.Errorf("result %q not counted", tc.result)
			}
			ps := patches(resp)
			if _, ok := ps["/metadata/annotations"]; ok != tc.wantPatched {
				t.Errorf("bookkeeping patch present = %v, want %v: %v", ok, tc.wantPatched, ps)
			}
		})
	}
}

func TestSufficientProfileIsApplied(t *testing.T) {
	f := newFixture(t, ballastConfig(), defaultPolicy())
	stamp := patches(f.h.Handle(context.Background(), request(t, ballastv1.ModeMeasure)))["/metadata/annotations"].(map[string]string)
	name := stamp[ballastv1.ProfileRefAnnotation]
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: ballastv1.WorkloadProfileStatus{
		State: ballastv1.StateSufficient, Containers: []ballastv1.ContainerProfile{{Name: "app",
			Recommendations: map[string]ballastv1.Recommendation{"cpu": {Request: "300m"}}}}}}
	if err := f.c.Create(context.Background(), wp); err != nil {
		t.Fatal(err)
	}
	resp := f.h.Handle(context.Background(), request(t, ballastv1.ModeApply))
	if !resp.Allowed || f.mutations(ResultMutated) != 1 {
		t.Fatalf("allowed=%v mutated=%v", resp.Allowed, f.mutations(ResultMutated))
	}
	got := false
	for path, v := range patches(resp) {
		if strings.Contains(path, "/spec/containers/0/resources") && strings.Contains(jsonString(v), "300m") {
			got = true
		}
	}
	if !got {
		t.Errorf("no cpu request patch to 300m: %v", patches(resp))
	}
	if n := testutil.ToFloat64(f.m.ApplyApplied.WithLabelValues("default", "team", name)); n != 1 {
		t.Errorf("apply.applied = %v", n)
	}
}

// TestMetricAttributesBounded: a caller chooses the labels of its pod and, forging a review,
// its namespace; neither becomes a metric attribute. A pod no profile was made for counts
// under profile "", a namespace that does not exist under namespace "".
func TestMetricAttributesBounded(t *testing.T) {
	f := newFixture(t, ballastConfig(), defaultPolicy())
	ctx := context.Background()
	f.h.Handle(ctx, request(t, ballastv1.ModeApply)) // labels app=shop: no profile exists
	if n := testutil.ToFloat64(f.m.ApplySkipped.WithLabelValues("no_profile", "", "team", "")); n != 1 {
		t.Errorf(`apply.skipped{no_profile, profile=""} = %v, want 1`, n)
	}
	forged := request(t, ballastv1.ModeApply)
	forged.Namespace = "no-such-namespace"
	if resp := f.h.Handle(ctx, forged); !resp.Allowed {
		t.Fatalf("forged review denied: %v", resp.Result)
	}
	if n := testutil.ToFloat64(f.m.WebhookMutations.WithLabelValues(ResultSkipped, "")); n != 1 {
		t.Errorf(`webhook.mutations{skipped, namespace=""} = %v, want 1`, n)
	}
	if n := testutil.CollectAndCount(f.m.ApplySkipped); n != 2 {
		t.Errorf("apply.skipped has %d series, want 2 (team and the unknown namespace)", n)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestKillSwitchAdmitsUnchangedAtWarn: SPEC §10.2, the pod is admitted without any patch,
// the suppression is logged at warn with kill_switch and kill_switch_reason, and counted.
func TestKillSwitchAdmitsUnchangedAtWarn(t *testing.T) {
	f := newFixture(t, ballastConfig(), defaultPolicy(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: operatorNS}})
	resp := f.h.Handle(context.Background(), request(t, ballastv1.ModeApply))
	if !resp.Allowed || len(resp.Patches) != 0 || f.mutations(ResultKillSwitch) != 1 {
		t.Fatalf("allowed=%v patches=%v", resp.Allowed, resp.Patches)
	}
	var line map[string]any
	for _, l := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(l, "admitting pod unchanged") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]any{"level": "warn", "kill_switch": true, "kill_switch_reason": config.ReasonConfigMap,
		"action": "admission", "namespace": "team", "pod": "web", "logger": "webhook"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	if n := testutil.ToFloat64(f.kill.Suppressed.WithLabelValues(config.ActionAdmission)); n != 1 {
		t.Errorf("suppressed{admission} = %v", n)
	}
	// An invalid mode is still denied under the kill switch.
	if resp := f.h.Handle(context.Background(), request(t, "bogus")); resp.Allowed {
		t.Error("invalid mode admitted under the kill switch")
	}
}
