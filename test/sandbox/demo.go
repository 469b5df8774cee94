package sandbox

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// DemoOptions are `make demo`'s settings.
type DemoOptions struct {
	Dir   string
	Keep  bool
	Nodes int
}

// NewDemoOptions returns the defaults.
func NewDemoOptions() *DemoOptions {
	return &DemoOptions{Dir: filepath.Join(os.TempDir(), "ballast-demo"), Nodes: 2}
}

// AddFlags registers the demo's flags.
func (o *DemoOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Dir, "dir", o.Dir, "sandbox folder (logs, kubeconfig, chart): a new or empty folder, or one an earlier demo created (emptied at start)")
	fs.BoolVar(&o.Keep, "keep", o.Keep, "keep the sandbox running after the scenario, until Ctrl-C")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, "simulated nodes")
}

// abs is p made absolute (p itself when that fails), so printed commands work from any folder.
func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// DemoScenario is the scenario `make demo` plays.
func DemoScenario() Scenario {
	return Scenario{
		Namespaces:      []string{"team-a", "team-b", "team-c"},
		NewNamespace:    "team-d",
		ResizeNamespace: "team-e",
		Shop:            App{Name: "shop", Component: "web", Model: ModelSteady, Replicas: 4, CPU: "1", Memory: "1Gi", MemLimit: "2Gi"},
		OOM:             App{Name: "imgproc", Component: "worker", Model: ModelOOM, Replicas: 1, CPU: "500m", Memory: "256Mi", MemLimit: "300Mi"},
		Wait:            5 * time.Minute,
	}
}

// DemoReadiness is the fast readiness preset of the demo: minutes, not a day.
var DemoReadiness = ballastv1.Readiness{MinDataPoints: 60, MinTimeSpan: "1m", MaxCV: "2.0"}

// RunDemo starts a sandbox, plays the demo scenario, prints the table and writes the chart.
func RunDemo(ctx context.Context, o *DemoOptions, w io.Writer) error {
	if err := PrepareDir(o.Dir); err != nil {
		return err
	}
	bin := harness.BinDir()
	s, err := Start(ctx, Options{Dir: o.Dir, Nodes: o.Nodes, ControlBin: filepath.Join(bin, "ballast-control"),
		NodeBin: filepath.Join(bin, "ballast-node"), SampleInterval: time.Second, Readiness: DemoReadiness, Progress: w,
		// The demo prints the accruing profile's sample count every 5 s; at the 1m default
		// refresh that count would stand still between writes.
		ControlArgs: []string{"--status-refresh-interval=5s"}})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintf(w, "stopping the sandbox (logs kept in %s)\n", s.Logs())
		s.Stop()
	}()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rec := s.Record(rctx, 2*time.Second)
	rep, err := DemoScenario().Run(ctx, s, rec, w)
	chart := filepath.Join(o.Dir, "ballast-demo.svg")
	time.Sleep(4 * time.Second) // let the chart show the settled state
	if cerr := WriteChart(chart, rec.Points()); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w (component logs: %s)", err, s.Logs())
	}
	fmt.Fprintln(w)
	rep.PrintTable(w)
	fmt.Fprintf(w, "\nOne profile (%s) pooled %d samples from %d workloads in %d namespaces.\n", rep.ShopProfile, rep.Samples, rep.SharedWorkloads, len(DemoScenario().Namespaces))
	fmt.Fprintf(w, "OOM reaction: %s memory limit recommendation %s → %s.\n", rep.OOMProfile, rep.OOMLimitBefore, rep.OOMLimitAfter)
	fmt.Fprintf(w, "In-place resize (kubelet side simulated): %s cpu request %s → %s, memory limit %s → %s, %s, same pod: %v.\n",
		rep.Resize.Pod, rep.Resize.CPUBefore, rep.Resize.CPUAfter, rep.Resize.MemLimBefore, rep.Resize.MemLimAf, rep.Resize.State, rep.Resize.SamePod)
	fmt.Fprintf(w, "Saved: %s.\n", Headline(rec.Points()))
	fmt.Fprintf(w, "Chart: %s\nLogs:  %s\n", chart, s.Logs())
	if o.Keep {
		fmt.Fprintf(w, "\nSandbox kept running (Ctrl-C to stop); in another shell:\n  KUBECONFIG=%s %s get workloadprofiles\n",
			abs(filepath.Join(o.Dir, "kubeconfig")), abs(filepath.Join(bin, "kubectl")))
		<-ctx.Done()
	}
	return nil
}
