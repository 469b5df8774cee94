package cgroup

import (
	"os"
	"path/filepath"
	"testing"
)

// Paths into testdata/cgroupv2-linux-6.12 (see its README).
const (
	realKernel = "testdata/cgroupv2-linux-6.12"
	s1Pod      = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f8a1e2c_5b6d_4e7f_9a0b_1c2d3e4f5a6b.slice"
	s1UID      = "3f8a1e2c-5b6d-4e7f-9a0b-1c2d3e4f5a6b"
	s1Ctr      = s1Pod + "/cri-containerd-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope"
	s1ID       = "containerd://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	s2Ctr      = s1Pod + "/cri-containerd-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.scope"
	s3Pod      = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod9c0d1e2f_3a4b_4c5d_8e6f_7a8b9c0d1e2f.slice"
	s3Ctr      = s3Pod + "/cri-containerd-cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc.scope"
)

// Identities used by the hand-made trees (testdata/README.md).
const (
	uidG = "6a1e0c1d-2b3c-4d5e-8f90-a1b2c3d4e5f6"
	uidB = "7b2f1d2e-3c4d-4e5f-9a01-b2c3d4e5f6a7"
	uidE = "8c3a2e3f-4d5e-4f6a-8b12-c3d4e5f6a7b8"
	idG  = "1111111111111111111111111111111111111111111111111111111111111111"
	idB  = "2222222222222222222222222222222222222222222222222222222222222222"
	idE  = "3333333333333333333333333333333333333333333333333333333333333333"
)

// scenario returns the path of scenario n's tree.
func scenario(n string) string { return filepath.Join(realKernel, "scenario"+n) }

// fixture reads a file of the real-kernel fixture tree.
func fixture(t testing.TB, scen, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(scenario(scen), rel))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// fixtureFiles returns every testdata file (real-kernel fixtures first, then the hand-made
// trees) with the given base name, as fuzz seeds.
func fixtureFiles(t testing.TB, base string) [][]byte {
	t.Helper()
	var out [][]byte
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != base {
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, b)
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("no %s fixtures (err %v)", base, err)
	}
	return out
}

// copyTree copies a testdata tree into a temp dir so a test may modify it.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	return dst
}

func openReader(t testing.TB, dir string, opts Options) *Reader {
	t.Helper()
	r, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
