// Package qemu is the real-kernel cgroup v2 tier (issue 14): the Debian 6.12 cloud kernel
// booted under qemu-system-x86_64 -accel tcg with a busybox initramfs holding a static
// build of test/integration/ebpf, which then runs on a pure cgroup v2 host with the memory
// controller (which this machine kind cannot give). It skips without qemu-system-x86_64,
// busybox (busybox-static) or the kernel (hack/qemu/fetch-kernel.sh).
package qemu

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/test/harness"
)

// guestTests are the packages built statically into the initramfs and the tests each runs
// there. test/integration/cgroupv2: the cgroup v2 reader (cpu.stat, working set,
// memory.max, PSI, memory.peak reset per file descriptor) and the inotify OOM watcher on
// real files. test/integration/ebpf: the OOM record on real v2 cgroups. Not run there: the
// reclaim test (an initramfs has no disk-backed page cache to reclaim) and the capability
// tests (busybox has no setpriv).
var guestTests = []struct{ name, pkg, run string }{
	{"cgroupv2", "./test/integration/cgroupv2", "."},
	{"ebpf", "./test/integration/ebpf", "TestOOMKillReportsVictimAndCgroup"},
}

func TestCgroupV2Guest(t *testing.T) {
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Skip("qemu-system-x86_64 not installed (apt-get install qemu-system-x86 busybox-static)")
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not installed (apt-get install busybox-static)")
	}
	root := harness.RepoRoot()
	kernel := filepath.Join(root, ".cache", "qemu", "vmlinuz")
	if _, err := os.Stat(kernel); err != nil {
		t.Skip("no guest kernel: run hack/qemu/fetch-kernel.sh")
	}
	work := t.TempDir()
	rootfs := filepath.Join(work, "rootfs")
	for _, d := range []string{"bin", "proc", "sys", "dev", "tmp", "tests"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(dir string, env []string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	for _, g := range guestTests {
		run(root, []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, "go", "test", "-c", "-o",
			filepath.Join(rootfs, "tests", g.name+".test"), g.pkg)
		if err := os.WriteFile(filepath.Join(rootfs, "tests", g.name+".run"), []byte(g.run), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(root, nil, "cp", busybox, filepath.Join(rootfs, "bin", "busybox"))
	run(root, nil, "cp", filepath.Join(root, "hack", "qemu", "init"), filepath.Join(rootfs, "init"))
	if err := os.Chmod(filepath.Join(rootfs, "init"), 0o755); err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(work, "initrd.gz")
	run(rootfs, nil, "/bin/sh", "-c", `find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$0"`, initrd)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, qemu, "-accel", "tcg", "-cpu", "max,-pku,-la57,-cx16", "-m", "1024", "-smp", "1",
		"-nographic", "-no-reboot", "-kernel", kernel, "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 quiet psi=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	wall := time.Since(start)
	log := out.String()
	t.Logf("guest wall time %v (boot + tests + power-off)", wall.Round(time.Second))
	result, kernelLine := "", ""
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.Contains(l, "GUEST-RESULT: "):
			result = strings.TrimSpace(l[strings.Index(l, "GUEST-RESULT: ")+len("GUEST-RESULT: "):])
		case strings.Contains(l, "GUEST-KERNEL: "):
			kernelLine = l[strings.Index(l, "GUEST-KERNEL: "):]
		case strings.Contains(l, "--- ") || strings.Contains(l, "_test.go:"):
			t.Log("guest: " + l)
		}
	}
	t.Log(kernelLine)
	if result != "0" {
		t.Fatalf("guest tests: result %q (qemu: %v); serial console:\n%s", result, err, tail(log, 80))
	}
	for _, name := range []string{"TestReaderOnRealCgroupV2", "TestOOMWatcherOnRealCgroupV2", "TestOOMKillReportsVictimAndCgroup"} {
		if !strings.Contains(log, "--- PASS: "+name) {
			t.Errorf("%s did not pass in the guest (skipped or missing)", name)
		}
	}
	if t.Failed() {
		t.Logf("serial console:\n%s", tail(log, 80))
	}
}

func tail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
