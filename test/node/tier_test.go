package node

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestRealNode installs the chart as a user does onto the real node and walks the
// acceptance scenario in order: each step needs the state the previous one left.
func TestRealNode(t *testing.T) {
	Require(t)
	ctx := context.Background()
	began := time.Now()
	steps := []struct {
		name string
		f    func(*testing.T, context.Context)
	}{
		{"install", testInstall},
		{"measure", testMeasure},
		{"apply", testApply},
		{"node-view", testNodeView},
		{"startup-boost", testStartupBoost},
		{"resize", testResize},
		{"resize-budget", testResizeBudget},
		{"hpa-guard", testHPAGuard},
		{"resize-donor", testResizeDonor},
		{"resize-handover", testResizeHandOver},
		{"resize-infeasible", testResizeInfeasible},
		{"resize-oom", testResizeOOM},
		{"resize-pressure", testResizePressure},
		{"resize-ephemeral", testResizeEphemeral},
		{"oom", testOOM},
		{"traffic-rollout", testTrafficRollout},
		{"summary", testSummary},
		{"footprint", testFootprint},
		{"upgrade", testUpgrade},
		{"uninstall", testUninstall},
		{"external-store", testExternalStore},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.f(t, ctx) }) {
			t.Fatalf("step %s failed; later steps need its state", s.name)
		}
	}
	t.Logf("timing: node ready %s, scenario %s", n.Timings.Started.Round(time.Second), time.Since(began).Round(time.Second))
}

var installedAt time.Time

// testInstall: helm install --wait with user values; the DaemonSet pod runs on the node,
// the control plane is Ready, and `helm test` shows the webhook answers through its Service.
func testInstall(t *testing.T, ctx context.Context) {
	start := time.Now()
	out := helm(t, append([]string{"install", release, chartDir(), "-n", namespace, "--create-namespace",
		"--wait", "--timeout", "5m"}, userValues(t)...)...)
	installedAt = time.Now()
	t.Logf("helm install --wait: %s", installedAt.Sub(start).Round(100*time.Millisecond))
	if !strings.Contains(out, "built-in certificates (certManager.enabled auto: the cluster does not serve cert-manager.io/v1)") {
		t.Errorf("NOTES do not say the built-in certificates were chosen:\n%s", out)
	}
	ds := &appsv1.DaemonSet{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ballast-node"}, ds); err != nil {
		t.Fatal(err)
	}
	if ds.Status.NumberReady != 1 || ds.Status.DesiredNumberScheduled != 1 {
		t.Errorf("DaemonSet ready %d of %d", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	}
	dep := &appsv1.Deployment{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ballast"}, dep); err != nil {
		t.Fatal(err)
	}
	if dep.Status.ReadyReplicas != 2 {
		t.Errorf("control plane ready replicas %d, want 2", dep.Status.ReadyReplicas)
	}
	out = helm(t, "test", release, "-n", namespace, "--timeout", "2m")
	if !strings.Contains(out, "Succeeded") {
		t.Errorf("helm test did not succeed:\n%s", out)
	}
}

// The known load: 200m of cpu and 150 MiB of touched memory.
const (
	loadMilliCPU = 200
	loadMiB      = 150
)

var measured *ballastv1.WorkloadProfile

// testMeasure: a measure-mode pod of the load app; the real agent reads its cgroup v1 files,
// the samples reach Valkey, and the profile's statistics match the load.
//
// Tolerances: the mean is exact from the sums (no bucket error), so cpu is held to ±15 %,
// which is the load app's own control error plus the Go runtime's background work on a
// shared 2-core machine. Memory percentiles carry the histogram's ≤2 % bucket error; the
// working set is the 150 MiB held plus the Go runtime and binary (under 12 MiB), so p50 must
// lie in [150 MiB × 0.98, (150 + 12) MiB × 1.02].
func testMeasure(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "measure")
	runningPod(t, ctx, loadPod("measure", "load", "worker", "measure",
		[]string{"-cpu-millis", fmt.Sprint(loadMilliCPU), "-memory-mib", fmt.Sprint(loadMiB)},
		res("50m", "200Mi"), res("", "400Mi")))
	var wp *ballastv1.WorkloadProfile
	harness.Eventually(t, 3*time.Minute, "profile loadapp/worker Sufficient", func() error {
		var err error
		if wp, err = profileOf(ctx, "worker"); err != nil {
			return err
		}
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q, containers %+v", wp.Status.State, wp.Status.Containers)
		}
		return nil
	})
	t.Logf("first Sufficient profile %s after install", time.Since(installedAt).Round(time.Second))
	measured = wp
	cpu, ok := stats(wp, "cpu")
	if !ok {
		t.Fatalf("no cpu statistics: %+v", wp.Status.Containers)
	}
	mq := quantity(t, "cpu mean", cpu.Mean)
	mean := mq.MilliValue()
	if math.Abs(float64(mean-loadMilliCPU)) > 0.15*loadMilliCPU {
		t.Errorf("cpu mean %dm (%s samples), want %dm ± 15%%", mean, fmt.Sprint(cpu.Samples), loadMilliCPU)
	}
	mem, ok := stats(wp, "memory")
	if !ok {
		t.Fatalf("no memory statistics: %+v", wp.Status.Containers)
	}
	pq := quantity(t, "memory p50", mem.P50)
	p50 := float64(pq.Value()) / (1 << 20)
	if p50 < loadMiB*0.98 || p50 > (loadMiB+12)*1.02 {
		t.Errorf("memory p50 %.1f MiB, want [%.1f, %.1f]", p50, loadMiB*0.98, (loadMiB+12)*1.02)
	}
	t.Logf("profile %s: cpu mean %s p50 %s (%d samples); memory p50 %s p99 %s", wp.Name, cpu.Mean, cpu.P50, cpu.Samples, mem.P50, mem.P99)
	// The samples are in Valkey, under the profile's measurement hash.
	addr := valkeyAddr(t, ctx)
	keys, err := valkeyCLI(ctx, addr, "--scan", "--pattern", "ballast:{"+wp.Status.MeasurementHash+"}:*")
	if err != nil || strings.TrimSpace(keys) == "" {
		t.Errorf("no Valkey keys for profile hash %s: %v %q", wp.Status.MeasurementHash, err, keys)
	}
}

// valkeyAddr is the subchart Valkey's Service address (the service stand-in forwards it).
func valkeyAddr(t *testing.T, ctx context.Context) string {
	t.Helper()
	svc := &corev1.Service{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-valkey"}, svc); err != nil {
		t.Fatal(err)
	}
	addr := svc.Spec.ClusterIP + ":6379"
	sec := &corev1.Secret{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-valkey-auth"}, sec); err != nil {
		t.Fatalf("the chart's Valkey password Secret: %v", err)
	}
	valkeyAuthMu.Lock()
	valkeyAuth[addr] = string(sec.Data["password"])
	valkeyAuthMu.Unlock()
	return addr
}

// testApply: the same app in a new namespace in apply mode is admitted with the requests
// of that profile, by the webhook the real API server calls through the chart's Service.
func testApply(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "apply")
	p := loadPod("apply", "load", "worker", "apply",
		[]string{"-cpu-millis", fmt.Sprint(loadMilliCPU), "-memory-mib", fmt.Sprint(loadMiB)},
		res("10m", "32Mi"), res("", "512Mi"))
	// The profile keeps updating while the load runs: the admitted requests must be the
	// recommendation as it was just before or just after the admission.
	before, err := profileOf(ctx, "worker")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	wp, err := profileOf(ctx, "worker")
	if err != nil {
		t.Fatal(err)
	}
	got := p.Spec.Containers[0].Resources
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q := got.Requests[r]
		var wants []string
		for _, w := range []*ballastv1.WorkloadProfile{before, wp} {
			want := recommendation(w, string(r)).Request
			if want == "" {
				t.Fatalf("profile has no %s request recommendation", r)
			}
			wants = append(wants, want)
		}
		if q.Cmp(quantity(t, "recommendation", wants[0])) != 0 && q.Cmp(quantity(t, "recommendation", wants[1])) != 0 {
			t.Errorf("admitted %s request %s, want the profile's %s (before) or %s (after)", r, q.String(), wants[0], wants[1])
		}
	}
	if p.Annotations["ballast.tightlinesoftware.com/profile-ref"] != wp.Name {
		t.Errorf("profile-ref %q, want %q (annotations %v)", p.Annotations["ballast.tightlinesoftware.com/profile-ref"], wp.Name, p.Annotations)
	}
	t.Logf("admitted with requests %v limits %v from profile %s", got.Requests, got.Limits, wp.Name)
}
