package nodeagent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// helperEnv re-executes the test binary as a workload: "hog" touches memory until it is
// killed, "write" writes 192 MiB through the page cache to $BALLAST_HELPER_FILE.
const helperEnv = "BALLAST_NODEAGENT_HELPER"

func runHelper() {
	switch os.Getenv(helperEnv) {
	case "hog":
		var keep [][]byte
		for {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
	case "write":
		f, err := os.Create(os.Getenv("BALLAST_HELPER_FILE"))
		if err != nil {
			os.Exit(2)
		}
		buf := make([]byte, 1<<20)
		for range 192 {
			if _, err := f.Write(buf); err != nil {
				os.Exit(2)
			}
		}
		_ = f.Close()
	}
}

// rawMetric is a metric's exposition line ("" when the family is absent).
func rawMetric(t testing.TB, a *agent, name string) string {
	t.Helper()
	resp, err := http.Get(a.metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), name+" ") {
			return sc.Text()
		}
	}
	return ""
}

func sourceOf(rep debug.Report, name string) *debug.SourceReport {
	for i := range rep.Sources {
		if rep.Sources[i].Name == name {
			return &rep.Sources[i]
		}
	}
	return nil
}

// --ebpf without any capability (uid 0, empty bounding set): nothing loads, one clear log
// line, ballast_node_ebpf_programs_loaded 0, and the agent samples from the files as ever
// (no crash, no retry).
func TestEBPFWithoutCapabilitiesRunsOnFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop every capability with setpriv (CI runs as root)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	ensureCluster(t)
	ns, node := createNamespace(t), newName("node")
	prof, hash := newName("ebpf-off"), newHash()
	createProfile(t, prof, hash)
	s := newSim(t)
	pod := &podSpec{ns: ns, name: "web-1", node: node, profile: prof, policy: "fast", containers: []string{"app"}}
	pod.create(t)
	s.addPod(t, pod, 0, map[string]simCtr{"app": {milli: 100, v: memValues(100*mi, 256*mi)}})
	a := startAgentWrapped(t, []string{setpriv, "--inh-caps=-all", "--bounding-set=-all", "--"}, node, s.tree.Root,
		"--debug-auth=false", "--ebpf")
	eventually(t, 30*time.Second, "file samples and three cgroup cycles", func() error {
		rep, err := a.report()
		if err != nil {
			return err
		}
		if src := sourceOf(rep, "cgroup"); src == nil || src.Runs < 3 {
			return fmt.Errorf("cgroup source %+v", src)
		}
		if recorded(rep, hash, "", "app", "memory", "usage") == 0 {
			return fmt.Errorf("no memory samples yet")
		}
		return nil
	})
	if got := rawMetric(t, a, "ballast_node_ebpf_programs_loaded"); got != "ballast_node_ebpf_programs_loaded 0" {
		t.Errorf("metric line %q, want ballast_node_ebpf_programs_loaded 0", got)
	}
	rep, _ := a.report()
	if src := sourceOf(rep, "ebpf"); src == nil || !strings.HasPrefix(src.Detail, "off: ") || !strings.Contains(src.Detail, "CAP_BPF") {
		t.Errorf("debug view's ebpf source %+v, want off with the missing capabilities named", src)
	}
	if a.exited() {
		t.Fatal("the agent exited")
	}
	log, _ := os.ReadFile(a.logPath)
	if n := strings.Count(string(log), "eBPF off: running on cgroup files alone"); n != 1 {
		t.Errorf("%d 'eBPF off' log lines, want exactly one (no retries)", n)
	}
	if !strings.Contains(string(log), "CAP_BPF") {
		t.Error("the log does not name the missing capabilities")
	}
}

// realPod is a pod's container cgroups made for real in this host's v1 memory hierarchy
// (nested in the test's own memory cgroup) and shown to the agent at <root>/memory by a
// bind mount in the agent's own mount namespace; cpuacct is a plain fixture directory.
type realPod struct {
	base string // the real memory cgroup holding kubepods/…
	root string // the agent's --cgroup-root
	dirs map[string]string
}

func newRealPod(t testing.TB, ps *podSpec) *realPod {
	t.Helper()
	own, ok := v1MemoryCgroup()
	if !ok {
		t.Skip("needs the cgroup v1 memory controller at /sys/fs/cgroup/memory (this host's layout)")
	}
	rp := &realPod{base: filepath.Join("/sys/fs/cgroup/memory", own, newName("ballast-agent")), root: t.TempDir(), dirs: map[string]string{}}
	podRel := filepath.Join("kubepods", "burstable", "pod"+ps.uid)
	var made []string
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			_ = os.Remove(made[i])
		}
	})
	for _, d := range []string{"", "kubepods", "kubepods/burstable", podRel} {
		p := filepath.Join(rp.base, d)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Skipf("cannot create a v1 memory cgroup: %v", err)
		}
		made = append(made, p)
	}
	if err := os.Mkdir(filepath.Join(rp.root, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, id := range ps.ids {
		mem := filepath.Join(rp.base, podRel, id)
		if err := os.Mkdir(mem, 0o755); err != nil {
			t.Fatal(err)
		}
		made = append(made, mem)
		rp.dirs[name] = mem
		cpu := filepath.Join(rp.root, "cpuacct", podRel, id)
		if err := os.MkdirAll(cpu, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cpu, "cpuacct.usage"), []byte("1000\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return rp
}

func v1MemoryCgroup() (string, bool) {
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err != nil {
		return "", false
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && strings.Contains(","+f[1]+",", ",memory,") {
			return f[2], true
		}
	}
	return "", false
}

// wrap runs the agent in a private mount namespace with the real memory cgroups bound at
// <root>/memory.
func (rp *realPod) wrap() []string {
	return []string{"unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
		`mount --bind "$0" "$1" && shift && exec "$@"`, rp.base, filepath.Join(rp.root, "memory")}
}

// run starts the test binary as helper mode inside container's memory cgroup.
func (rp *realPod) run(t testing.TB, container, mode string, env ...string) *exec.Cmd {
	t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$0" && exec "$1"`, filepath.Join(rp.dirs[container], "cgroup.procs"), self)
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// The agent with --ebpf on real kernel cgroups: a container's OOM kill reaches the OOM
// stream once although both eBPF and the v1 oom_kill poll see it, and a container pushed
// into limit reclaim shows a non-zero reclaim stall in the debug view while an idle one
// shows none.
func TestEBPFKillCountedOnceAndReclaimStall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: real memory cgroups, a bind mount and BPF programs (CI runs as root)")
	}
	ensureCluster(t)
	ns, node := createNamespace(t), newName("node")
	prof, hash := newName("ebpf"), newHash()
	createProfile(t, prof, hash)
	pod := &podSpec{ns: ns, name: "hog-1", node: node, profile: prof, policy: "fast", containers: []string{"app", "idle"}}
	pod.create(t)
	rp := newRealPod(t, pod)
	if err := os.WriteFile(filepath.Join(rp.dirs["app"], "memory.limit_in_bytes"), []byte("33554432"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startAgentWrapped(t, rp.wrap(), node, rp.root, "--debug-auth=false", "--ebpf", "--cgroup-version", "v1")
	if got := rawMetric(t, a, "ballast_node_ebpf_programs_loaded"); got != "ballast_node_ebpf_programs_loaded 3" {
		t.Fatalf("metric line %q, want 3 programs loaded as root", got)
	}
	var cycles int64
	eventually(t, 30*time.Second, "both containers sampled and joined to their memcg", func() error {
		rep, err := a.report()
		if err != nil {
			return err
		}
		p := findPod(rep, ns, pod.name)
		if p == nil || len(p.Containers) != 2 {
			return fmt.Errorf("pod %+v", p)
		}
		for _, c := range p.Containers {
			if c.ReclaimStall == nil || c.ReclaimStall.MemcgID == 0 {
				return fmt.Errorf("%s: no stall reading yet", c.Name)
			}
		}
		cycles = sourceOf(rep, "cgroup").Runs
		return nil
	})

	r := storeReader(t)
	hog := rp.run(t, "app", "hog")
	start := time.Now()
	_ = hog.Wait()
	until(t, start.Add(10*time.Second), "the kill in the OOM stream", func() error {
		recs, err := r.ReadOOM(context.Background(), hash, "")
		if err != nil || len(recs) == 0 {
			return fmt.Errorf("no entry (%v)", err)
		}
		return nil
	})
	t.Logf("hog start → OOM stream entry: %v", time.Since(start).Round(time.Millisecond))
	// The v1 poll (1 s interval) sees the same kill in oom_control: wait for it.
	eventually(t, 20*time.Second, "the polled count deduplicated", func() error {
		n, err := a.metric("ballast_node_oom_events_total", `result="deduplicated"`)
		if err != nil || n != 1 {
			return fmt.Errorf("deduplicated %v (%v)", n, err)
		}
		return nil
	})
	recs, err := r.ReadOOM(context.Background(), hash, "")
	if err != nil || len(recs) != 1 {
		t.Fatalf("OOM stream: %d entries (%v), want exactly one for one kill", len(recs), err)
	}
	if ev := recs[0].Event; ev.Container != "app" || ev.Kind != "container" || ev.LimitBytes != 32*mi {
		t.Errorf("event %+v, want container app, kind container, limit 32 MiB", ev)
	}
	// The eBPF record won the race with the poll, so the entry names the victim.
	var st syscall.Stat_t
	if err := syscall.Stat(rp.dirs["app"], &st); err != nil {
		t.Fatal(err)
	}
	if ev := recs[0].Event; ev.PID != uint32(hog.Process.Pid) || ev.Comm == "" || ev.RSSBytes < 16*mi || ev.LimitCgroupID != st.Ino {
		t.Errorf("victim pid %d comm %q rss %d limit cgroup %d, want pid %d, a comm, most of 32 MiB, cgroup %d",
			ev.PID, ev.Comm, ev.RSSBytes, ev.LimitCgroupID, hog.Process.Pid, st.Ino)
	}
	if got := rawMetric(t, a, "ballast_node_ebpf_lost_events_total"); got != "ballast_node_ebpf_lost_events_total 0" {
		t.Errorf("metric line %q, want ballast_node_ebpf_lost_events_total 0", got)
	}

	w := rp.run(t, "app", "write", "BALLAST_HELPER_FILE="+filepath.Join(t.TempDir(), "pagecache"))
	if err := w.Wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	eventually(t, 20*time.Second, "the writer's reclaim stall in the debug view", func() error {
		rep, err := a.report()
		if err != nil {
			return err
		}
		if sourceOf(rep, "cgroup").Runs <= cycles {
			return fmt.Errorf("no cycle yet")
		}
		for _, c := range findPod(rep, ns, pod.name).Containers {
			switch {
			case c.Name == "app" && c.ReclaimStall.TotalPasses == 0:
				return fmt.Errorf("app: no reclaim yet %+v", c.ReclaimStall)
			case c.Name == "idle" && c.ReclaimStall.TotalPasses != 0:
				t.Errorf("idle container stalled: %+v", c.ReclaimStall)
			case c.Name == "app":
				t.Logf("app reclaim stall: %+v", *c.ReclaimStall)
			}
		}
		return nil
	})
	if txt := getText(t, a, "?format=text"); !strings.Contains(txt, "reclaim stall") {
		t.Errorf("the text view shows no reclaim stall:\n%s", txt)
	}

	// No PSI on cgroup v1: the reclaim stall is the container's memory pressure. Writers
	// keep the app container in limit reclaim for several 1 s cycles; its readings reach
	// the profile's pressure stream, the idle container's never do.
	stop := make(chan struct{})
	done := make(chan struct{})
	cache := "BALLAST_HELPER_FILE=" + filepath.Join(t.TempDir(), "pagecache")
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = rp.run(t, "app", "write", cache).Wait()
		}
	}()
	defer func() { close(stop); <-done }()
	var pressed []store.PressureRecord
	eventually(t, 30*time.Second, "an ebpf pressure reading of app in the stream", func() error {
		recs, err := r.ReadPressure(context.Background(), hash, "")
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if rec.Err == nil && rec.Reading.Container == "app" && rec.Reading.Source == series.PressureSourceEBPF {
				pressed = recs
				return nil
			}
		}
		return fmt.Errorf("%d readings, none of app", len(recs))
	})
	for _, rec := range pressed {
		rd := rec.Reading
		if rd.Container == "idle" {
			t.Errorf("idle container under pressure: %+v", rd)
		}
		if rd.Pod != ns+"/"+pod.name || rd.Node != node || rd.StallPerSec < series.PressureFloor || rd.Interval <= 0 {
			t.Errorf("reading %+v, want pod %s/%s on %s, at least the floor", rd, ns, pod.name, node)
		}
		t.Logf("app pressure: %.1f%% stalled over %v", 100*rd.Fraction(), rd.Interval)
	}
	if n, err := a.metric("ballast_node_pressure_readings_total", `result="written"`); err != nil || n == 0 {
		t.Errorf("pressure readings written = %v (%v)", n, err)
	}
}
