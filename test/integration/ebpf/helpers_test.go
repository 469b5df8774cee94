package ebpf_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The test binary doubles as the workloads (re-executed with BALLAST_EBPF_HELPER set), so
// the tests need nothing but themselves: "hog" allocates and touches memory until the
// kernel kills it, "write" writes a file through the page cache, "probe" opens the eBPF
// probe with whatever privileges it was started with and reports.
const helperEnv = "BALLAST_EBPF_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "hog":
		hog()
	case "write":
		writeFile(os.Args[len(os.Args)-1])
	case "probe":
		probeChild()
	case "oomloop":
		oomLoop(os.Args[len(os.Args)-1])
	}
	os.Exit(0)
}

// oomLoop runs n hogs (tail buffering its input) one after the other in its own cgroup, each with oom_score_adj 1000
// from before its exec (raising it needs no privilege), so the killer always picks the hog
// and never the loop: the cgroup sees n OOM kills in quick succession.
func oomLoop(n string) {
	count, err := strconv.Atoi(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for range count {
		// tail keeps the last 64 MiB of its input in memory: a cheap hog to start.
		c := exec.Command("/bin/sh", "-c", `echo 1000 > /proc/self/oom_score_adj && head -c 67108864 /dev/zero | tail -c 67108864 >/dev/null`)
		_ = c.Run() // killed by design
	}
}

// hog touches 1 MiB chunks until it is killed.
func hog() {
	var keep [][]byte
	for {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
}

// writeFile writes 192 MiB through the page cache (reclaimable, so a small memcg reclaims
// instead of killing).
func writeFile(path string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	buf := make([]byte, 1<<20)
	for i := 0; i < 192; i++ {
		if _, err := f.Write(buf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	_ = f.Close()
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("eBPF integration tests need root (they create memory cgroups and load BPF programs); CI runs them as root")
	}
}

// cgSeq numbers the cgroups of this process (tests run sequentially).
var cgSeq int

// memcg is a memory cgroup made for one test.
type memcg struct {
	dir   string // absolute directory
	procs string // the file a pid is written to
	v2    bool
}

// newMemcg creates a memory cgroup with limit bytes: on cgroup v1, nested in this
// process's own memory cgroup (hierarchical, so it stays inside the caller's limit); on a
// v2 host with the memory controller, below the root.
func newMemcg(t testing.TB, limit int64) *memcg {
	t.Helper()
	cgSeq++
	name := fmt.Sprintf("ballast-ebpf-%d-%d-%s", os.Getpid(), cgSeq, strings.ReplaceAll(t.Name(), "/", "_"))
	var m memcg
	if own, ok := v1MemoryPath(); ok {
		m.dir = filepath.Join("/sys/fs/cgroup/memory", own, name)
		if err := os.Mkdir(m.dir, 0o755); err != nil {
			t.Skipf("cannot create a v1 memory cgroup: %v", err)
		}
		write(t, filepath.Join(m.dir, "memory.limit_in_bytes"), strconv.FormatInt(limit, 10))
	} else if ctl, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control"); err == nil && strings.Contains(string(ctl), "memory") {
		m.v2, m.dir = true, filepath.Join("/sys/fs/cgroup", name)
		if err := os.Mkdir(m.dir, 0o755); err != nil {
			t.Skipf("cannot create a v2 cgroup: %v", err)
		}
		write(t, filepath.Join(m.dir, "memory.max"), strconv.FormatInt(limit, 10))
		write(t, filepath.Join(m.dir, "memory.swap.max"), "0")
	} else {
		t.Skip("no memory controller to create a test cgroup in (neither cgroup v1 memory nor v2 with +memory)")
	}
	m.procs = filepath.Join(m.dir, "cgroup.procs")
	t.Cleanup(func() { _ = os.Remove(m.dir) })
	return &m
}

// v1MemoryPath is this process's cgroup in the v1 memory hierarchy.
func v1MemoryPath() (string, bool) {
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err != nil {
		return "", false
	}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",memory,") {
			return parts[2], true
		}
	}
	return "", false
}

// id is the cgroup id the kernel reports for the cgroup: its directory's inode number.
func (m *memcg) id(t testing.TB) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(m.dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// start runs the test binary as helper mode in the cgroup: the shell moves itself in
// before it execs, so every page the helper touches is charged to the cgroup.
func (m *memcg) start(t testing.TB, mode string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := `echo $$ > "$1" && shift && exec "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh", m.procs, self}, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func write(t testing.TB, path, v string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
}
