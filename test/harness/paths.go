// Package harness starts the real servers Ballast's integration tests run against: etcd and
// kube-apiserver v1.37.2 built by `make tools` into bin/, and Valkey 8 (or redis-server as
// the fallback) from the machine's packages, standalone or as a three-master cluster.
// A missing binary is a test failure that says how to get it, never a skip.
package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinDir returns the folder `make tools` builds the test-bed binaries into.
// BALLAST_BIN overrides it.
func BinDir() string {
	if d := os.Getenv("BALLAST_BIN"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "bin")
}

// Tool returns the path of a test-bed binary in BinDir, or an error telling how to build it.
func Tool(name string) (string, error) {
	p := filepath.Join(BinDir(), name)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		return "", fmt.Errorf("test-bed binary %s not found: run `make tools` (builds the pinned tools into bin/)", p)
	}
	return p, nil
}

// lookPathAny returns the first of names found on PATH.
func lookPathAny(hint string, names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("none of %v found on PATH: %s", names, hint)
}
