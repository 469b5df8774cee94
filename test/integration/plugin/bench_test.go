package plugin

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ballastk8s/ballast/test/harness"
)

// BenchmarkBinary measures the built kubectl-ballast binary end to end (process start,
// kubeconfig loading, API calls, rendering): --help, and profiles against the real API
// server holding the fixture of the views tests. It reports the binary size too.
func BenchmarkBinary(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "kubectl-ballast")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-ballast")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building: %v\n%s", err, out)
	}
	st, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	kc, _ := views(b)
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"help", []string{"--help"}},
		{"profiles", []string{"--kubeconfig", kc, "profiles"}},
		{"explain", []string{"--kubeconfig", kc, "explain", "-n", "shop", "deploy/cache"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportMetric(float64(st.Size())/(1<<20), "binary-MiB")
			for b.Loop() {
				if out, err := exec.Command(bin, bc.args...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %v\n%s", bc.args, err, out)
				}
			}
		})
	}
}
