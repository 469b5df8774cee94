// Package control runs ballast-control's manager (controllers and webhook, as the binary
// wires them) against a real kube-apiserver, which calls the webhook over TLS, and a real
// Valkey store that the tests fill the way node agents do.
package control

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/app"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

var srv *harness.Servers

func TestMain(m *testing.M) {
	harness.Logger()
	harness.Main(m, harness.Need{Kube: true, Valkey: true}, &srv)
}

const operatorNS = "ballast-system"

// env is one running control plane.
type env struct {
	kube     *harness.Kube
	c        client.Client
	clock    *clocktesting.FakeClock
	registry *prometheus.Registry
	app      *app.App
	store    *store.Client
	writer   *store.Writer
	reader   *store.Reader
	port     int
	certDir  string
	opts     *app.Options
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

// startEnv starts a manager on kube with the store at storeURL, registers the webhook in the
// API server by URL and installs the fast test policy.
func startEnv(t *testing.T, kube *harness.Kube, storeURL string, tune ...func(*app.Options)) *env {
	t.Helper()
	ctx := context.Background()
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{kube: kube, c: kube.Client, clock: clocktesting.NewFakeClock(time.Now().UTC().Truncate(time.Second)), port: port,
		certDir: t.TempDir(), done: make(chan struct{})}
	e.registry = prometheus.NewRegistry()
	if e.store, err = store.Open(storeURL); err != nil {
		t.Fatal(err)
	}
	layout := series.DefaultLayout(ballastv1.DefaultRetentionWindow)
	if e.writer, err = store.NewWriter(e.store, layout); err != nil {
		t.Fatal(err)
	}
	if e.reader, err = store.NewReader(e.store, layout); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, e.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}})
	mustCreate(t, e.c, webhookConfig(port))

	o := app.NewOptions()
	o.OperatorNamespace, o.LeaderElect, o.RedisURL = operatorNS, false, storeURL
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.WebhookHost, o.WebhookPort, o.WebhookCertPath, o.WebhookDNSNames = "127.0.0.1", port, e.certDir, "127.0.0.1"
	o.SkipControllerNameValidation = true
	// The suites step the fake clock and check statistics after each reconcile: every
	// material change is written (TestStatusRefreshInterval tunes the interval).
	o.StatusRefreshInterval = 0
	for _, f := range tune {
		f(o)
	}
	e.opts = o
	mctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	if e.app, err = app.NewApp(mctx, o, kube.Config, app.Deps{Registry: e.registry, Clock: e.clock}); err != nil {
		t.Fatal(err)
	}
	mgr := e.app.Manager
	go func() {
		defer close(e.done)
		if err := mgr.Start(mctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	t.Cleanup(e.stop)

	// Cluster-wide configuration the way the chart installs it, with a fast readiness preset.
	mustCreate(t, e.c, &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app.kubernetes.io/name", "app.kubernetes.io/component"}, OrphanTTL: "1h",
			PolicyFloors: testFloors}})
	for name, typ := range map[string]string{"kubernetes-metrics": ballastv1.SourceTypeKubernetesMetrics, "kubelet-summary": ballastv1.SourceTypeKubeletSummary} {
		mustCreate(t, e.c, &ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: ballastv1.MetricsSourceSpec{Type: typ, Config: ballastv1.MetricsSourceConfig{PollInterval: "1s"}}})
	}
	mustCreate(t, e.c, &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: fastPolicy()})
	e.waitWebhook(t)
	return e
}

// testFloors let the suites' ResourcePolicies use the fast preset (2m spans, seconds-long
// intervals); TestBoundedInputs sets the chart's defaults to check them.
var testFloors = ballastv1.PolicyFloors{MinResizeInterval: "1s", MinTimeSpan: "1s", MinThreshold: "0"}

func fastPolicy() ballastv1.ResourcePolicySpec {
	return ballastv1.ResourcePolicySpec{
		Metrics: []ballastv1.MetricSpec{
			{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
			{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75"},
			{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
		},
		Readiness: ballastv1.Readiness{MinDataPoints: 12, MinTimeSpan: "2m", MaxCV: "2.0"},
	}
}

func webhookConfig(port int) *admissionregistrationv1.MutatingWebhookConfiguration {
	return harness.WebhookConfiguration("ballast", fmt.Sprintf("https://127.0.0.1:%d%s", port, ballastv1.WebhookPath), operatorNS)
}

func (e *env) stop() {
	e.stopOnce.Do(func() {
		e.cancel()
		<-e.done
		e.store.Close()
	})
}

// waitWebhook waits until the API server calls the webhook successfully: a measure pod
// comes back stamped.
func (e *env) waitWebhook(t *testing.T) {
	t.Helper()
	ns := e.namespace(t, "probe")
	eventually(t, 30*time.Second, "webhook answers the API server", func() error {
		p := pod("probe", ns, "measure", "probe", "probe")
		p.GenerateName, p.Name = "probe-", ""
		if err := e.c.Create(context.Background(), p); err != nil {
			return err
		}
		if p.Annotations[ballastv1.ProfileRefAnnotation] == "" {
			return fmt.Errorf("pod %s was not stamped", p.Name)
		}
		return nil
	})
}

// servedSerial returns the serial number of the certificate the webhook serves.
func (e *env) servedSerial(t *testing.T) string {
	t.Helper()
	s := servedSerialOrEmpty(e)
	if s == "" {
		t.Fatal("webhook not serving TLS")
	}
	return s
}

func servedSerialOrEmpty(e *env) string {
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", e.port), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return ""
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

var nsSeq struct {
	sync.Mutex
	n int
}

// namespace creates a fresh namespace named after prefix.
func (e *env) namespace(t *testing.T, prefix string) string {
	t.Helper()
	nsSeq.Lock()
	nsSeq.n++
	name := fmt.Sprintf("%s-%d", prefix, nsSeq.n)
	nsSeq.Unlock()
	mustCreate(t, e.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return name
}

// pod builds a pod of app name/component in mode, with one container "app" requesting
// 1 cpu and 1Gi (the over-provisioned author values Ballast should correct).
func pod(name, ns, mode, app, component string) *corev1.Pod {
	labels := map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/component": component}
	if mode != "" {
		labels[ballastv1.ModeLabel] = mode
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "example.invalid/app:1",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			},
		}}},
	}
}

// profile waits for the profile a pod is stamped with and returns it once cond holds.
func (e *env) profile(t *testing.T, name string, what string, cond func(*ballastv1.WorkloadProfile) error) *ballastv1.WorkloadProfile {
	t.Helper()
	wp := &ballastv1.WorkloadProfile{}
	eventually(t, 30*time.Second, what, func() error {
		if err := e.c.Get(context.Background(), client.ObjectKey{Name: name}, wp); err != nil {
			return err
		}
		return cond(wp)
	})
	return wp
}

// writeSamples flushes one node's samples of a container series: values taken every step
// ending at the fake clock's now, aggregated into store windows as an agent would.
func (e *env) writeSamples(t *testing.T, hash, container, res string, values []float64, step time.Duration) {
	t.Helper()
	e.writeSamplesEnding(t, e.clock.Now(), hash, container, res, values, step)
}

// writeSamplesEnding is writeSamples with the last sample at end instead of now.
func (e *env) writeSamplesEnding(t *testing.T, end time.Time, hash, container, res string, values []float64, step time.Duration) {
	t.Helper()
	layout := series.DefaultLayout(ballastv1.DefaultRetentionWindow)
	windows := map[time.Time]*series.Histogram{}
	for i, v := range values {
		at := end.Add(-time.Duration(len(values)-1-i) * step)
		start := series.WindowStart(at, layout.Window)
		if windows[start] == nil {
			windows[start] = &series.Histogram{}
		}
		if err := windows[start].Add(v, at); err != nil {
			t.Fatal(err)
		}
	}
	var ups []series.WindowUpdate
	for start, h := range windows {
		ups = append(ups, series.WindowUpdate{Series: series.SeriesID{Profile: hash, Container: container,
			Resource: res, Signal: series.SignalUsage}, Start: start, Hist: h})
	}
	if err := e.writer.Flush(context.Background(), ups); err != nil {
		t.Fatal(err)
	}
}

// reconcile runs the profiles controller once on profile name now, the way the manager
// would after a change: tests write the store directly, which no watch sees.
func (e *env) reconcile(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	wp := &ballastv1.WorkloadProfile{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.Controllers.Profiles.Reconcile(ctx, wp); err != nil {
		t.Fatalf("reconciling profile %s: %v", name, err)
	}
}

// gather returns the metric families of the control plane's registry by name.
func (e *env) gather(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := e.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// counterTotal sums every series of the counter name.
func (e *env) counterTotal(t *testing.T, name string) float64 {
	t.Helper()
	total := 0.0
	for _, m := range e.gather(t)[name].GetMetric() {
		total += m.GetCounter().GetValue()
	}
	return total
}

func mustCreate(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// eventually is harness.Eventually.
var eventually = harness.Eventually

func stat(wp *ballastv1.WorkloadProfile, container, res string) *ballastv1.UsageStats {
	for _, c := range wp.Status.Containers {
		if c.Name != container {
			continue
		}
		for i := range c.UsageStats {
			if c.UsageStats[i].Resource == res {
				return &c.UsageStats[i]
			}
		}
	}
	return nil
}
