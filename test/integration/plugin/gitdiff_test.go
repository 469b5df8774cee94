package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitDiff runs `diff` against the cluster: each template is bound as admission binds
// it (BallastConfig's identity labels, the winning policy: web's ClusterResourcePolicy,
// cache's ResourcePolicy with its clamp and step-down), api's profile is Accruing.
func TestGitDiff(t *testing.T) {
	kc, _ := views(t)
	r := run(t, kc, "diff", "-f", "testdata/gitdiff-shop.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden(t, "gitdiff-shop", r.stdout+"# stderr\n"+r.stderr)
}

// TestGitExport runs `export` over shop's live workloads, to stdout and to --dir.
func TestGitExport(t *testing.T) {
	kc, _ := views(t)
	r := run(t, kc, "export", "-o", "yaml", "-n", "shop")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden(t, "export-shop", r.stdout+"# stderr\n"+r.stderr)
	dir := t.TempDir()
	r = run(t, kc, "export", "-o", "yaml", "-n", "shop", "--dir", dir)
	if r.code != 0 {
		t.Fatalf("--dir: exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "shop", "deployment-web.yaml"))
	if err != nil || !strings.Contains(string(b), "cpu: 300m") {
		t.Fatalf("--dir wrote no web patch with the recommendation: %v\n%s\n%s", err, b, r.stdout)
	}
	if r := run(t, kc, "export", "-o", "json", "-n", "shop"); r.code != 1 {
		t.Fatalf("-o json: exit %d, want 1", r.code)
	}
}
