package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/certs"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/metrics"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/control/webhook"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/test/harness"
)

const benchRate = 200 // requests per second

// benchProfiles is the number of Sufficient profiles in the cache (make bench-scale sets it
// from the scale's pod count).
var benchProfiles = envInt("BALLAST_ADMISSION_PROFILES", 10000)

// BenchmarkAdmissionLatency measures the webhook handler over TLS at a fixed 200 requests/s
// with 10,000 Sufficient profiles in the informer cache, against a baseline TLS handler that
// decodes the same AdmissionReview and allows it, measured in the same run.
func BenchmarkAdmissionLatency(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := srv.Kube.Client
	must(b, c.Create(ctx, &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app.kubernetes.io/name", "app.kubernetes.io/component"}}}))
	must(b, c.Create(ctx, &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{
			{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
			{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75"},
			{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"}}}}))
	start := time.Now()
	createProfiles(b, benchProfiles)
	b.Logf("created %d Sufficient profiles in %s", benchProfiles, time.Since(start).Round(time.Millisecond))

	dir := b.TempDir()
	bundle, _, err := certs.Plan(certs.Bundle{}, time.Now(), certs.DefaultLifetimes, []string{"127.0.0.1"})
	must(b, err)
	must(b, os.WriteFile(filepath.Join(dir, "tls.crt"), bundle.TLSCert, 0o600))
	must(b, os.WriteFile(filepath.Join(dir, "tls.key"), bundle.TLSKey, 0o600))
	port, err := harness.FreePort()
	must(b, err)
	mgr, err := ctrl.NewManager(srv.Kube.Config, ctrl.Options{Scheme: srv.Kube.Scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})})
	must(b, err)
	reg := prometheus.NewRegistry()
	km := config.NewMetrics(reg)
	state := config.NewState(km)
	must(b, config.New(clock.RealClock{}, mgr.GetClient(), state, km, "ballast-system", ctrl.Log.WithName("config")).Register(mgr))
	m := webhook.NewMetrics(reg, metrics.NewShared(reg))
	h := webhook.New(mgr.GetCache(), mgr.GetScheme(), state, resolve.New(mgr.GetCache()), m, false, ctrl.Log.WithName("bench"))
	mgr.GetWebhookServer().Register(ballastv1.WebhookPath, &admission.Webhook{Handler: h})
	mgr.GetWebhookServer().Register("/baseline", http.HandlerFunc(baseline))
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	waitFor(b, func() bool {
		l := &ballastv1.WorkloadProfileList{}
		_ = mgr.GetCache().List(ctx, l)
		return len(l.Items) == benchProfiles && state.Get().Config != nil
	})

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle.CABundle)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64}}
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	n := max(b.N, 2000) // at least 10 s at 200/s, for a meaningful p99
	// Warm up both paths (TLS sessions, caches).
	run(b, hc, url+ballastv1.WebhookPath, 200)
	run(b, hc, url+"/baseline", 200)
	b.ResetTimer()
	lat := run(b, hc, url+ballastv1.WebhookPath, n)
	base := run(b, hc, url+"/baseline", n)
	b.StopTimer()
	p := func(xs []time.Duration, q float64) float64 {
		return float64(xs[int(q*float64(len(xs)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p(lat, 0.50), "p50-ms")
	b.ReportMetric(p(lat, 0.99), "p99-ms")
	b.ReportMetric(p(base, 0.50), "baseline-p50-ms")
	b.ReportMetric(p(base, 0.99), "baseline-p99-ms")
	b.ReportMetric(p(lat, 0.99)/p(base, 0.99), "p99-ratio")
	if out := os.Getenv("BALLAST_ADMISSION_OUT"); out != "" {
		j, _ := json.Marshal(map[string]float64{"profiles": float64(benchProfiles), "p50_ms": p(lat, .5), "p99_ms": p(lat, .99),
			"baseline_p50_ms": p(base, .5), "baseline_p99_ms": p(base, .99)})
		must(b, os.WriteFile(out, j, 0o644))
	}
	fmt.Printf("\n%-28s %10s %10s\n%-28s %10.2f %10.2f\n%-28s %10.2f %10.2f\n%-28s %10.2f %10.2f\n",
		fmt.Sprintf("admission @%d/s, %d profiles", benchRate, benchProfiles), "p50 ms", "p99 ms",
		"ballast handler", p(lat, .5), p(lat, .99), "baseline (decode+allow)", p(base, .5), p(base, .99),
		"ratio", p(lat, .5)/p(base, .5), p(lat, .99)/p(base, .99))
}

// run sends n admission requests paced at benchRate and returns sorted latencies.
func run(b *testing.B, hc *http.Client, url string, n int) []time.Duration {
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / benchRate)
	defer tick.Stop()
	for i := 0; i < n; i++ {
		<-tick.C
		body := review(i)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			t0 := time.Now()
			resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lat[i] = time.Since(t0)
			if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"allowed":true`)) {
				b.Errorf("status %d: %s", resp.StatusCode, out)
			}
		}(i)
	}
	wg.Wait()
	slices.Sort(lat)
	return lat
}

func review(i int) []byte {
	app := fmt.Sprintf("app-%d", i%benchProfiles)
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: "bench", Labels: map[string]string{
			"app.kubernetes.io/name": app, "app.kubernetes.io/component": "api", ballastv1.ModeLabel: "apply"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "i", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
	}
	raw, _ := json.Marshal(pod)
	ar := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprint(i)), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "bench", Name: pod.Name,
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}
	out, _ := json.Marshal(ar)
	return out
}

// baseline decodes the AdmissionReview and its pod, and allows it.
func baseline(w http.ResponseWriter, r *http.Request) {
	ar := admissionv1.AdmissionReview{}
	if err := json.NewDecoder(r.Body).Decode(&ar); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod := &corev1.Pod{}
	_ = json.Unmarshal(ar.Request.Object.Raw, pod)
	ar.Response = &admissionv1.AdmissionResponse{UID: ar.Request.UID, Allowed: true}
	ar.Request = nil
	_ = json.NewEncoder(w).Encode(ar)
}

// createProfiles creates n Sufficient profiles of apps app-0..app-(n-1) (component api,
// default policy) with recommendations, the way the profiles controller would leave them.
func createProfiles(b *testing.B, n int) {
	ctx := context.Background()
	disc := identity.Discriminator(ballastv1.KindClusterResourcePolicy, "", "default")
	keys := []string{"app.kubernetes.io/name", "app.kubernetes.io/component"}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				tuple, sel := identity.Tuple(keys, map[string]string{keys[0]: fmt.Sprintf("app-%d", i), keys[1]: "api"})
				wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: identity.ProfileName(keys, tuple, sel, disc)}}
				if err := srv.Kube.Client.Create(ctx, wp); err != nil {
					b.Error(err)
					continue
				}
				wp.Status = ballastv1.WorkloadProfileStatus{State: ballastv1.StateSufficient, MeetsThreshold: true,
					TupleLabels: tuple, SelectorLabels: sel,
					PolicyRef: &ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "default"},
					Containers: []ballastv1.ContainerProfile{{Name: "app", Recommendations: map[string]ballastv1.Recommendation{
						"cpu": {Request: "300m"}, "memory": {Request: "192Mi", Limit: "288Mi"}}}}}
				if err := srv.Kube.Client.Status().Update(ctx, wp); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
}

func waitFor(b *testing.B, f func() bool) {
	deadline := time.Now().Add(2 * time.Minute)
	for !f() {
		if time.Now().After(deadline) {
			b.Fatal("timed out")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
