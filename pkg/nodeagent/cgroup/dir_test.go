package cgroup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDirReaders: both ways of reading an open directory (the descriptor on Linux, an
// os.Root elsewhere) read whole files of any size, report a missing file as ErrNotExist, and
// never open anything but a file directly inside the directory.
func TestDirReaders(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("pgfault 15849\n"), 1000) // 14 kB: the buffer grows
	if err := os.Mkdir(filepath.Join(dir, "cg"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"cpu.stat": []byte("usage_usec 42\n"), "memory.stat": big, "empty": nil} {
		if err := os.WriteFile(filepath.Join(dir, "cg", name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret", filepath.Join(dir, "cg", "link")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	for name, open := range map[string]func(*os.Root, string) (dirReader, error){"openDir": openDir, "openRootDir": openRootDir} {
		t.Run(name, func(t *testing.T) {
			d, err := open(root, "cg")
			if err != nil {
				t.Fatal(err)
			}
			var buf []byte
			for file, want := range map[string][]byte{"cpu.stat": []byte("usage_usec 42\n"), "memory.stat": big, "empty": {}} {
				got, err := d.readFile(file, &buf)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes, %v; want %d bytes", file, len(got), err, len(want))
				}
			}
			if cap(buf) < len(big) {
				t.Errorf("buffer of %d bytes not kept for the next read", cap(buf))
			}
			if _, err := d.readFile("memory.peak", &buf); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("missing file: %v, want ErrNotExist", err)
			}
			for _, bad := range []string{"link", "../secret", "..", ".", "", "cg/cpu.stat"} {
				if got, err := d.readFile(bad, &buf); err == nil {
					t.Errorf("%q read %q, want an error", bad, got)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := d.readFile("cpu.stat", &buf); !errors.Is(err, os.ErrClosed) {
				t.Errorf("read after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// TestCollectorKeepsDirectories: the Collector opens a container's directories once, closes
// them when the container leaves the target list, and reopens them when its cgroup was
// recreated under the same path (read by path meanwhile, so no reading is lost).
func TestCollectorKeepsDirectories(t *testing.T) {
	dir := copyTree(t, "testdata/cgroupfs-v2")
	c := NewCollector(openReader(t, dir, Options{}))
	defer c.Close()
	ctx := context.Background()
	b := Target{Key: "b", PodUID: uidB, QOS: Burstable, ContainerID: "containerd://" + idB}
	g := Target{Key: "g", PodUID: uidG, QOS: Guaranteed, ContainerID: "containerd://" + idG}

	if _, errs, err := c.Collect(ctx, t0, []Target{b, g}); err != nil || len(errs) != 0 {
		t.Fatal(err, errs)
	}
	bDirs, gDirs := c.st[b.Key].dirs, c.st[g.Key].dirs
	if bDirs == nil || gDirs == nil {
		t.Fatal("directories not kept open")
	}
	if _, errs, err := c.Collect(ctx, t0.Add(time.Second), []Target{b}); err != nil || len(errs) != 0 {
		t.Fatal(err, errs)
	}
	if c.st[b.Key].dirs != bDirs {
		t.Error("directories opened again for a container that stayed")
	}
	if !isClosed(t, gDirs) {
		t.Error("directories of a container that left are still open")
	}

	// Recreate b's cgroup under the same path with a new counter.
	bDir := filepath.Join(dir, "kubepods/burstable/pod"+uidB+"/"+idB)
	if err := os.Rename(bDir, bDir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(bDir, os.DirFS(bDir+".old")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bDir, "cpu.stat"), []byte("usage_usec 7000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(bDir + ".old"); err != nil {
		t.Fatal(err)
	}
	got, errs, err := c.Collect(ctx, t0.Add(2*time.Second), []Target{b})
	if err != nil || len(errs) != 0 || len(got) != 1 || got[0].Sample.CPU.UsageNanos != 7e9 {
		t.Fatalf("recreated cgroup: %+v, %v; want usage 7s read by path", got, err)
	}
	if c.st[b.Key].dirs != nil || !isClosed(t, bDirs) {
		t.Error("directories of the removed cgroup kept")
	}
	if _, errs, err := c.Collect(ctx, t0.Add(3*time.Second), []Target{b}); err != nil || len(errs) != 0 {
		t.Fatal(err, errs)
	}
	if d := c.st[b.Key].dirs; d == nil || d.stale {
		t.Errorf("directories not reopened after the cgroup was recreated: %+v", d)
	}

	last := c.st[b.Key].dirs
	c.Close()
	if !isClosed(t, last) {
		t.Error("Close left directories open")
	}
}

// isClosed reports whether the directories were closed: reading through them fails so.
func isClosed(t *testing.T, o *openDirs) bool {
	t.Helper()
	_, err := o.mem.readFile("cpu.stat", new([]byte))
	return errors.Is(err, os.ErrClosed)
}
