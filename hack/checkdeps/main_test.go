package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyTree copies the module at src (without .git and bin) into a temp dir.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel == ".git" || rel == "bin" || strings.HasPrefix(rel, "hack/tools") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func write(t *testing.T, root, rel, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, rel), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckFailsOnBadImports adds deliberately bad imports to a copy of this repository
// and expects each to be reported; the tree as it is must be clean.
func TestCheckFailsOnBadImports(t *testing.T) {
	root := filepath.Join("..", "..")
	if problems, err := Check(root); err != nil || len(problems) != 0 {
		t.Fatalf("the repository itself: %v %v", problems, err)
	}
	tmp := copyTree(t, root)
	write(t, tmp, "pkg/series/zz_bad.go", `package series

import (
	"net/http"
	"os"
	clock "time"
)

var _ = http.MethodGet

func badNow() clock.Time { _ = os.Getenv("X"); return clock.Now() }
`)
	write(t, tmp, "pkg/resizeplan/zz_bad.go", `package resizeplan

import (
	"time"

	_ "sigs.k8s.io/controller-runtime/pkg/client"
)

func badSince(t time.Time) time.Duration { return time.Since(t) }
`)
	write(t, tmp, "pkg/nodeagent/discovery/zz_bad.go", `package discovery

import _ "github.com/ballastk8s/ballast/pkg/control/config"
`)
	write(t, tmp, "pkg/control/crds/zz_bad.go", `package crds

import _ "github.com/ballastk8s/ballast/test/harness"
`)
	problems, err := Check(tmp)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pkg/series/zz_bad.go:4: pure package imports net/http",
		"pkg/series/zz_bad.go:5: pure package imports os",
		"pkg/series/zz_bad.go:11: pure package reads the clock (clock.Now)",
		"pkg/resizeplan/zz_bad.go:6: pure package imports sigs.k8s.io/controller-runtime/pkg/client",
		"pkg/resizeplan/zz_bad.go:9: pure package reads the clock (time.Since)",
		"cmd/ballast-node links github.com/ballastk8s/ballast/pkg/control/config",
		"cmd/ballast-control links github.com/ballastk8s/ballast/test/harness",
	}
	all := strings.Join(problems, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("missing finding %q in:\n%s", w, all)
		}
	}
}
