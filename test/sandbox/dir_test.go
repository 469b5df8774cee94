package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrepareDir(t *testing.T) {
	root := t.TempDir()

	// A folder it did not create, with someone's files: refused, nothing deleted.
	checkout := filepath.Join(root, "checkout")
	if err := os.MkdirAll(filepath.Join(checkout, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := PrepareDir(checkout)
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("PrepareDir(non-empty foreign folder) = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(checkout, "go.mod")); err != nil {
		t.Fatalf("the foreign folder lost a file: %v", err)
	}

	// A new folder is created and marked; its next use empties it.
	fresh := filepath.Join(root, "fresh")
	if err := PrepareDir(fresh); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fresh, "old.log"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PrepareDir(fresh); err != nil {
		t.Fatalf("PrepareDir(its own folder) = %v", err)
	}
	if _, err := os.Stat(filepath.Join(fresh, "old.log")); !os.IsNotExist(err) {
		t.Errorf("the demo's own folder was not emptied: %v", err)
	}

	// An existing empty folder is used.
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := PrepareDir(empty); err != nil {
		t.Errorf("PrepareDir(empty folder) = %v", err)
	}
}
