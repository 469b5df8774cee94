package sandbox

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/ballastk8s/ballast/test/harness"
)

// TestMetricsServerScrapesStandIns runs the real metrics-server v0.8.0 against the kubelet
// stand-ins and reads PodMetrics through the aggregated metrics.k8s.io API: the usage the
// workload model drives (steady: 180m ± noise, 160Mi) arrives at metrics-server's own
// resolution.
func TestMetricsServerScrapesStandIns(t *testing.T) {
	if _, err := harness.Tool("metrics-server"); err != nil {
		t.Skipf("%v (hack/tools/build.sh metrics-server)", err)
	}
	harness.Logger()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ballast-control")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ballast-control")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ballast-control: %v\n%s", err, out)
	}
	s, err := Start(ctx, Options{Dir: dir, Nodes: 1, ControlBin: bin, SampleInterval: time.Second,
		Readiness: DemoReadiness, Progress: testWriter{t}, MetricsServer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.Deploy(ctx, "team-a", App{Name: "shop", Component: "web", Model: ModelSteady, Replicas: 1, CPU: "1", Memory: "1Gi"}, "measure"); err != nil {
		t.Fatal(err)
	}
	mc, err := metricsclient.NewForConfig(s.Kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	var seen []time.Time
	err = poll(ctx, 120*time.Second, "two PodMetrics points", func() error {
		list, err := mc.MetricsV1beta1().PodMetricses("team-a").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 || len(list.Items[0].Containers) != 1 {
			return fmt.Errorf("pod metrics %+v", list.Items)
		}
		pm := list.Items[0]
		cpu, mem := pm.Containers[0].Usage.Cpu().MilliValue(), pm.Containers[0].Usage.Memory().Value()
		// steady: 180m with σ 6m, 160Mi with σ 2Mi; a rate over ≥ 10 s of 1 s ticks.
		if math.Abs(float64(cpu)-180) > 30 || math.Abs(float64(mem)-160*mi) > 12*mi {
			return fmt.Errorf("usage cpu %dm memory %d, want ≈180m, ≈160Mi", cpu, mem)
		}
		if pm.Window.Duration < 5*time.Second || pm.Window.Duration > 30*time.Second {
			return fmt.Errorf("window %v, want about the 10s resolution", pm.Window.Duration)
		}
		if len(seen) == 0 || !pm.Timestamp.Time.Equal(seen[len(seen)-1]) {
			seen = append(seen, pm.Timestamp.Time)
		}
		if len(seen) < 2 {
			return fmt.Errorf("one point so far (%s)", seen[0])
		}
		t.Logf("PodMetrics: cpu %dm, memory %.1fMi, window %v, points %v apart", cpu, float64(mem)/mi, pm.Window.Duration, seen[1].Sub(seen[0]))
		return nil
	})
	if err != nil {
		t.Fatalf("%v (logs in %s)", err, s.Logs())
	}
}
