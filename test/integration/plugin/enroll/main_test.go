// Package enroll runs `kubectl ballast enroll` against the sandbox's control plane: a real
// kube-apiserver, kube-controller-manager and kube-scheduler with kwok nodes (so pods run
// and rollouts really happen) and a real ballast-control. Output is compared with golden
// files in testdata/ (-update rewrites them); pod UIDs prove what restarted.
package enroll

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var sb *sandbox.Sandbox

func TestMain(m *testing.M) {
	flag.Parse()
	harness.Logger()
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "ballast-enroll-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		control := filepath.Join(dir, "ballast-control")
		b := exec.Command("go", "build", "-o", control, "./cmd/ballast-control")
		b.Dir = harness.RepoRoot()
		if out, err := b.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building ballast-control: %v\n%s", err, out)
			return 1
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		sb, err = sandbox.Start(ctx, sandbox.Options{Dir: dir, Nodes: 2, ControlBin: control, SampleInterval: 10 * time.Second,
			Readiness: ballastv1.Readiness{MinDataPoints: 5, MinTimeSpan: "1m", MaxCV: "2.0"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandbox:", err)
			return 1
		}
		defer sb.Stop()
		hbCtx, stopHeartbeat := context.WithCancel(context.Background())
		defer stopHeartbeat()
		var nodes []string
		for _, n := range sb.Nodes {
			nodes = append(nodes, n.Name)
		}
		go fakeKubeletHeartbeat(hbCtx, sb.Client, nodes)
		return m.Run()
	}())
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}
	code := ballast.Run(context.Background(), append([]string{"--kubeconfig", sb.Kube.Kubeconfig}, args...), streams)
	t.Logf("kubectl ballast %s => exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run with -update to create it): %v", path, err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (run with -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
