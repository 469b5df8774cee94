package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// memcgRoot is the cgroup v1 memory hierarchy; this machine's kernel mounts it (TESTBED.md).
const memcgRoot = "/sys/fs/cgroup/memory"

// MemCgroup is a cgroup v1 memory cgroup with a hard limit, the way the kubelet bounds a
// container with limits.memory: a process that starts in it is charged for its anonymous
// memory and page cache, the kernel reclaims page cache at the limit, and the OOM killer
// ends the process when what cannot be reclaimed passes it.
type MemCgroup struct {
	Dir   string
	Limit int64
}

// MemCgroupAvailable says whether this machine lets the caller create memory cgroups.
func MemCgroupAvailable() bool {
	st, err := os.Stat(filepath.Join(memcgRoot, "memory.limit_in_bytes"))
	return err == nil && !st.IsDir() && os.Geteuid() == 0
}

// NewMemCgroup creates the cgroup name under the memory hierarchy with a hard limit.
func NewMemCgroup(name string, limit int64) (*MemCgroup, error) {
	if !MemCgroupAvailable() {
		return nil, errors.New("no writable cgroup v1 memory hierarchy at " + memcgRoot)
	}
	if limit <= 0 {
		return nil, fmt.Errorf("memory cgroup limit %d: want > 0", limit)
	}
	c := &MemCgroup{Dir: filepath.Join(memcgRoot, name), Limit: limit}
	if err := os.Mkdir(c.Dir, 0o755); err != nil && !os.IsExist(err) {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		_ = os.Remove(c.Dir)
		return nil, fmt.Errorf("setting %s's limit: %w", c.Dir, err)
	}
	return c, nil
}

// Wrap returns the command that runs bin with args inside the cgroup: a shell moves itself
// in and execs bin, so the process (same pid) is charged from its first page (cgroup v1
// cannot move charges of a running process on this kernel). The binary's pages are dropped
// from the page cache first: a page is charged to the cgroup that reads it in, and a freshly
// built binary sits in the builder's cache, where a container's would not.
func (c *MemCgroup) Wrap(bin string, args []string) (string, []string) {
	dropCached(bin)
	script := `echo $$ > "$1" && shift && exec "$@"`
	return "/bin/sh", append([]string{"-c", script, "sh", filepath.Join(c.Dir, "cgroup.procs"), bin}, args...)
}

// MemCgroupStats is what the kernel recorded for the cgroup.
type MemCgroupStats struct {
	LimitMiB    float64
	UsageMiB    float64 // memory.usage_in_bytes: anonymous memory plus page cache
	MaxUsageMiB float64 // memory.max_usage_in_bytes: the highest usage since creation
	RSSMiB      float64 // memory.stat rss: anonymous memory, what cannot be reclaimed without swap
	CacheMiB    float64 // memory.stat cache: page cache (the binary's pages among it)
	FailCnt     int64   // memory.failcnt: times a charge hit the limit (and the kernel reclaimed)
	OOMKills    int64   // memory.oom_control oom_kill
	MajorFaults int64   // memory.stat pgmajfault: pages read back from disk (a thrashing program's own code among them)
}

// Stats reads the cgroup's counters.
func (c *MemCgroup) Stats() (MemCgroupStats, error) {
	var st MemCgroupStats
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	st.LimitMiB = mib(c.Limit)
	for file, dst := range map[string]*float64{"memory.usage_in_bytes": &st.UsageMiB, "memory.max_usage_in_bytes": &st.MaxUsageMiB} {
		v, err := readInt(filepath.Join(c.Dir, file))
		if err != nil {
			return st, err
		}
		*dst = mib(v)
	}
	var err error
	if st.FailCnt, err = readInt(filepath.Join(c.Dir, "memory.failcnt")); err != nil {
		return st, err
	}
	stat, err := readKeyed(filepath.Join(c.Dir, "memory.stat"))
	if err != nil {
		return st, err
	}
	st.RSSMiB, st.CacheMiB, st.MajorFaults = mib(stat["rss"]), mib(stat["cache"]), stat["pgmajfault"]
	oom, err := readKeyed(filepath.Join(c.Dir, "memory.oom_control"))
	if err != nil {
		return st, err
	}
	st.OOMKills = oom["oom_kill"]
	return st, nil
}

// Remove deletes the cgroup once its processes have gone (children of a killed process may
// take a moment to end), trying for up to five seconds.
func (c *MemCgroup) Remove() error {
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = os.Remove(c.Dir); err == nil || os.IsNotExist(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// dropCached writes back and evicts path's pages from the page cache (best effort).
func dropCached(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = unix.Fdatasync(int(f.Fd()))
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// readKeyed reads a file of "key value" lines (memory.stat, memory.oom_control).
func readKeyed(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		out[k] = n
	}
	return out, nil
}
