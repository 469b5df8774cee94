// Package e2e runs the whole loop — ballast-node → Valkey → profiles → webhook — with the
// real binaries in the sandbox (`make demo`'s machinery), on a shorter scenario.
package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

func build(t *testing.T, dir, cmd string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(cmd))
	b := exec.Command("go", "build", "-o", out, "./"+cmd)
	b.Dir = harness.RepoRoot()
	if msg, err := b.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", cmd, err, msg)
	}
	return out
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// TestMeasureProfileApply: an app measured in two namespaces feeds one profile; once it is
// Sufficient, the app deployed into a new namespace is sized at its first admission; an
// OOM-ing app's memory recommendation jumps after a kill; `kubectl ballast report` over
// the running sandbox adds up to the profiles' statuses; an app Prometheus scraped while it
// ran unenrolled is Sufficient as soon as it is enrolled.
func TestMeasureProfileApply(t *testing.T) {
	harness.Logger()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	s, err := sandbox.Start(ctx, sandbox.Options{Dir: dir, Nodes: 1,
		ControlBin: build(t, dir, "cmd/ballast-control"), NodeBin: build(t, dir, "cmd/ballast-node"),
		SampleInterval: time.Second, Progress: logWriter{t}, Prometheus: true,
		Readiness: ballastv1.Readiness{MinDataPoints: 20, MinTimeSpan: "20s", MaxCV: "2.0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	sc := sandbox.Scenario{
		Namespaces:      []string{"team-a", "team-b"},
		NewNamespace:    "team-c",
		ResizeNamespace: "team-d",
		Shop:            sandbox.App{Name: "shop", Component: "web", Model: sandbox.ModelSteady, Replicas: 2, CPU: "1", Memory: "1Gi", MemLimit: "2Gi"},
		OOM:             sandbox.App{Name: "imgproc", Component: "worker", Model: sandbox.ModelOOM, Replicas: 1, CPU: "500m", Memory: "128Mi", MemLimit: "200Mi"},
		Wait:            3 * time.Minute,
	}
	// An app that runs unenrolled through the loop while Prometheus scrapes it.
	since := time.Now()
	if err := s.Deploy(ctx, "team-early", ledger, ""); err != nil {
		t.Fatal(err)
	}
	rec := s.Record(ctx, 2*time.Second)
	rep, err := sc.Run(ctx, s, rec, logWriter{t})
	if err != nil {
		t.Fatalf("%v\ncomponent logs: %s", err, s.Logs())
	}
	if rep.SharedPods != 4 || rep.SharedWorkloads != 2 {
		t.Errorf("shared profile %s: %d pods from %d workloads, want 4 pods from 2 Deployments", rep.ShopProfile, rep.SharedPods, rep.SharedWorkloads)
	}
	// The steady model uses ~180m cpu: avg × 1.25 ≈ 225m, far below the author's 1 cpu.
	cpu, err := resource.ParseQuantity(rep.Recommendation["cpu"].Request)
	if err != nil || cpu.MilliValue() < 200 || cpu.MilliValue() > 250 {
		t.Errorf("cpu recommendation %q, want ≈225m (steady 180m × 1.25)", rep.Recommendation["cpu"].Request)
	}
	if !rep.NewPodsSized {
		t.Errorf("pods of the new namespace were not sized at first admission (logs: %s)", s.Logs())
	}
	if rep.OOMLimitAfter == "" || rep.OOMLimitAfter == rep.OOMLimitBefore {
		t.Errorf("OOM did not raise the memory limit recommendation: %q → %q", rep.OOMLimitBefore, rep.OOMLimitAfter)
	}
	// The resize rung: one running pod stepped in place (50% of the gap toward ≈225m).
	before, after := resource.MustParse(rep.Resize.CPUBefore), resource.MustParse(rep.Resize.CPUAfter)
	if rep.Resize.State != ballastv1.ResizeStateCompleted || !rep.Resize.SamePod || after.Cmp(before) >= 0 || after.MilliValue() < 550 {
		t.Errorf("in-place resize: %+v, want one step from 1 cpu to ≈612m, Completed, same pod", rep.Resize)
	}
	// The savings report over what the loop left running (issue 31): its totals are the
	// sums over the profiles' statuses and their pods.
	checkReport(ctx, t, s, filepath.Join(dir, "kubeconfig"))
	// Day-0 history (issue 31): enrolled after the loop, the app that ran unenrolled is
	// Sufficient at once from what Prometheus scraped of it.
	checkBackfill(ctx, t, s, since, 20*time.Second)
	if err := sandbox.WriteChart(filepath.Join(dir, "chart.svg"), rec.Points()); err != nil {
		t.Error(err)
	}
}
