package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMemCgroupOOMKills runs a shell that holds 96 MiB in a 32 MiB cgroup: the kernel must
// kill it, and Stats must count the kill, the way the live bench reports ballast-control's;
// and a program whose pages were evicted, whose major faults Stats must count.
func TestMemCgroupOOMKills(t *testing.T) {
	if !MemCgroupAvailable() {
		t.Skip("no writable cgroup v1 memory hierarchy (needs root and the v1 memory controller)")
	}
	cg, err := NewMemCgroup(fmt.Sprintf("ballast-test-%d", os.Getpid()), 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cg.Remove(); err != nil {
			t.Error(err)
		}
	}()
	run := func(script string) error {
		bin, args := cg.Wrap("/bin/sh", []string{"-c", script})
		return exec.Command(bin, args...).Run()
	}
	if err := run("x=$(head -c 4000000 /dev/zero | tr '\\0' a); test ${#x} -eq 4000000"); err != nil {
		t.Fatalf("4 MB in a 32 MiB cgroup: %v", err)
	}
	st, err := cg.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.OOMKills != 0 || st.MaxUsageMiB <= 0 || st.LimitMiB != 32 {
		t.Fatalf("after a run within the limit: %+v", st)
	}
	// A program no other process maps, its pages evicted by Wrap, faults its code in from
	// disk: major faults, charged to the cgroup.
	prog := filepath.Join(t.TempDir(), "true")
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, b, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, args := cg.Wrap(prog, nil)
	if err := exec.Command(bin, args...).Run(); err != nil {
		t.Fatalf("running a copy of /bin/true in the cgroup: %v", err)
	}
	if st, err = cg.Stats(); err != nil {
		t.Fatal(err)
	}
	if st.MajorFaults < 1 {
		t.Fatalf("a freshly evicted program ran without a major fault: %+v", st)
	}
	err = run("x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo ${#x}")
	if err == nil {
		t.Fatal("a shell holding 96 MiB in a 32 MiB cgroup was not killed")
	}
	if st, err = cg.Stats(); err != nil {
		t.Fatal(err)
	}
	if st.OOMKills < 1 || st.FailCnt == 0 {
		t.Fatalf("the kill is not counted: %+v (run: %v)", st, err)
	}
}
