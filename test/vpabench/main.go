// Command vpabench measures Ballast beside the real Vertical Pod Autoscaler v1.8.1 on
// identical sandboxes (`make bench-vpa`): one scenario, the same seed, once per system. It
// prints one table and writes it, with a chart, into docs/benchmarks.md. Not part of
// `make test`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ballastk8s/ballast/pkg/cli"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "ballast-vpabench"), "work folder (one sandbox per system below it; emptied at start)")
	nodes := flag.Int("nodes", 2, "simulated nodes per sandbox")
	seed := flag.Uint64("seed", 1, "workload models' seed (the same for both systems)")
	only := flag.String("only", "", "run one system only: ballast or vpa")
	docs := flag.String("docs", "", "write the table and chart into this markdown file (between the bench-vpa markers)")
	sch := Schedule{}
	flag.DurationVar(&sch.NewNamespaceAt, "new-namespace-at", 3*time.Minute, "when the brand-new namespace is deployed")
	flag.DurationVar(&sch.TeardownAt, "teardown-at", 4*time.Minute, "when team-b's shop is torn down")
	flag.DurationVar(&sch.Gap, "gap", 20*time.Second, "time between teardown and redeploy")
	flag.DurationVar(&sch.Total, "total", 7*time.Minute, "length of each run")
	mode := flag.String("mode", "compare", "compare (make bench-vpa), scale (make bench-scale: VPA's side, printed beside Ballast's) or ballast-live (make bench-scale-live: the real ballast-control at scale)")
	so := ScaleOptions{}
	flag.IntVar(&so.Pods, "pods", 20000, "scale: pods")
	flag.IntVar(&so.Replicas, "replicas", 2, "scale: replicas per Deployment (one VPA each)")
	flag.DurationVar(&so.Window, "window", 6*time.Minute, "scale: how long VPA's loops are watched")
	ballastScale := flag.String("ballast", "", "scale: Ballast's BenchmarkScale JSON")
	ballastAdm := flag.String("ballast-admission", "", "scale: Ballast's BenchmarkAdmissionLatency JSON")
	liveScale := flag.String("ballast-live", "", "scale: the live ballast-control run's JSON (scale-ballast-live.json), printed below")
	vpaScale := flag.String("vpa", "", "scale: VPA's side from an earlier run (the scale-vpa.json it wrote) instead of running it again")
	lo := LiveOptions{}
	flag.IntVar(&lo.Rate, "rate", 200, "ballast-live: pod creates per second in the churn phase")
	flag.IntVar(&lo.BaselineEvery, "baseline-every", 10, "ballast-live: every n-th create is a baseline pod the webhook skips")
	flag.DurationVar(&lo.Sampling, "sampling", time.Minute, "ballast-live: the MetricsSources' pollInterval (each profile is recomputed once per interval)")
	flag.DurationVar(&lo.Flush, "flush", 10*time.Second, "ballast-live: the simulated agents' flush interval")
	flag.DurationVar(&lo.History, "history", 2*time.Hour, "ballast-live: history written per series before the cold pass")
	flag.IntVar(&lo.HistoryDays, "history-days", 0, "ballast-live: whole days of daily rollups written per series before today's history (6 fills the default week of retention; the retention is a week, or longer for more days)")
	flag.DurationVar(&lo.Steady, "steady", 4*time.Minute, "ballast-live: how long the steady phase is measured")
	memLimit := flag.String("memory-limit", os.Getenv(cli.MemoryLimitEnv), "ballast-live: ballast-control's limits.memory (a quantity): its Go soft limit, and the hard limit of a memory cgroup it runs in where this machine has one")
	controlArgs := flag.String("control-args", "", "ballast-live: extra ballast-control flags, space-separated")
	flag.Parse()
	harness.Logger()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *mode == "ballast-live" {
		lo.Nodes, lo.Pods, lo.Replicas, lo.ControlArgs = *nodes, so.Pods, so.Replicas, strings.Fields(*controlArgs)
		if *memLimit != "" {
			q, err := resource.ParseQuantity(*memLimit)
			if err != nil || q.Value() <= 0 {
				fmt.Fprintf(os.Stderr, "-memory-limit %q: want a positive quantity such as 512Mi\n", *memLimit)
				os.Exit(2)
			}
			lo.MemoryLimit = q.Value()
			// ballast-control inherits it: the Go soft limit it sets from limits.memory.
			os.Setenv(cli.MemoryLimitEnv, strconv.FormatInt(lo.MemoryLimit, 10))
		}
		if err := liveMain(ctx, *dir, lo); err != nil {
			fmt.Fprintln(os.Stderr, "bench-scale-live failed:", err)
			os.Exit(1)
		}
		return
	}
	if *mode == "scale" {
		so.Nodes = *nodes
		if err := scaleMain(ctx, *dir, so, *ballastScale, *ballastAdm, *vpaScale, *liveScale, *docs); err != nil {
			fmt.Fprintln(os.Stderr, "bench-scale failed:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, *dir, *nodes, *seed, *only, *docs, sch); err != nil {
		fmt.Fprintln(os.Stderr, "bench-vpa failed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string, nodes int, seed uint64, only, docs string, sch Schedule) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	bin := filepath.Join(dir, "bin")
	fmt.Printf("building ballast-control and ballast-node into %s\n", bin)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", "./cmd/ballast-control", "./cmd/ballast-node")
	build.Dir, build.Stdout, build.Stderr = harness.RepoRoot(), os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return err
	}
	var results []*Result
	for _, sys := range []string{sandbox.SystemBallast, sandbox.SystemVPA} {
		if only != "" && only != sys {
			continue
		}
		r, err := runSide(ctx, filepath.Join(dir, sys), bin, sys, nodes, seed, sch)
		if err != nil {
			return fmt.Errorf("%s: %w", sys, err)
		}
		results = append(results, r)
	}
	md := Markdown(results, nodes, seed, sch)
	fmt.Println()
	fmt.Println(md)
	if docs != "" {
		return WriteSection(docs, "bench-vpa", md)
	}
	return nil
}

func runSide(ctx context.Context, dir, bin, sys string, nodes int, seed uint64, sch Schedule) (*Result, error) {
	o := sandbox.Options{Dir: dir, Nodes: nodes, ControlBin: filepath.Join(bin, "ballast-control"),
		NodeBin: filepath.Join(bin, "ballast-node"), SampleInterval: time.Second, Readiness: sandbox.DemoReadiness,
		Progress: os.Stdout, System: sys, Seed: seed, VPA: VPAFlags,
		// The sandbox's default is debug; VPA runs at its default verbosity, so Ballast at info.
		ControlArgs: []string{"--log-level", "info"}}
	s, err := sandbox.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	var sd side = ballastSide{s}
	if sys == sandbox.SystemVPA {
		sd = vpaSide{s}
	}
	r, err := play(ctx, s, sd, sys, sch, os.Stdout)
	if err != nil {
		return nil, fmt.Errorf("%w (logs in %s)", err, s.Logs())
	}
	return r, nil
}

// VPAFlags compress VPA's day-scale defaults by the same factor as the sandbox compresses
// Ballast's readiness (a day of history → one minute; docs/benchmarks.md says why it is fair).
var VPAFlags = sandbox.VPAOptions{
	Recommender: []string{"--recommender-interval=10s",
		"--memory-aggregation-interval=1m", "--memory-aggregation-interval-count=8",
		"--memory-histogram-decay-half-life=1m", "--cpu-histogram-decay-half-life=1m",
		"--confidence-interval-cpu=1m", "--confidence-interval-memory=1m"},
	Updater: []string{"--updater-interval=10s", "--min-replicas=1",
		"--in-recommendation-bounds-eviction-lifetime-threshold=30s"},
}
