// Package plugin runs `kubectl ballast` (pkg/kubectl/ballast, in process, through the same
// entry point as the binary) against a real kube-apiserver and compares its output with
// golden files in testdata/ (go test ./test/integration/plugin/ -update rewrites them).
// The enroll suite additionally runs the sandbox's kube-controller-manager, scheduler and
// kwok nodes, so rollouts really happen.
package plugin

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
	"github.com/ballastk8s/ballast/test/harness"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var srv *harness.Servers

func TestMain(m *testing.M) {
	harness.Logger()
	harness.Main(m, harness.Need{Kube: true}, &srv)
}

// result is one plugin invocation.
type result struct {
	code           int
	stdout, stderr string
}

// run invokes the plugin with the test cluster's kubeconfig.
func run(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}
	code := ballast.Run(context.Background(), append([]string{"--kubeconfig", kubeconfig}, args...), streams)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// golden compares got with testdata/name.golden (rewriting it under -update).
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
