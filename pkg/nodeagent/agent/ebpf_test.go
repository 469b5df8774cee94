package agent

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
)

func TestOOMLedgerCountsOneKillOnce(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := 10 * time.Second
	var l oomLedger
	// eBPF first (milliseconds), then inotify's oom_kill increase of the same kill.
	if n := l.fresh(true, 1, t0, w); n != 1 {
		t.Fatalf("eBPF kill: fresh %d, want 1", n)
	}
	if n := l.fresh(false, 1, t0.Add(5*time.Millisecond), w); n != 0 {
		t.Fatalf("the files' count of the same kill: fresh %d, want 0", n)
	}
	// Files first (a poll), eBPF later: still one.
	if n := l.fresh(false, 2, t0.Add(time.Minute), w); n != 2 {
		t.Fatalf("two polled kills: fresh %d, want 2", n)
	}
	if n := l.fresh(true, 1, t0.Add(time.Minute-3*time.Second), w); n != 0 {
		t.Fatalf("eBPF report of a polled kill: fresh %d, want 0", n)
	}
	if n := l.fresh(true, 1, t0.Add(time.Minute+time.Second), w); n != 0 {
		t.Fatalf("eBPF report of the second polled kill: fresh %d, want 0", n)
	}
	// Outside the window the other path's report is another kill.
	if n := l.fresh(true, 1, t0.Add(2*time.Minute), w); n != 1 {
		t.Fatalf("a later eBPF kill: fresh %d, want 1", n)
	}
	if n := l.fresh(false, 1, t0.Add(3*time.Minute), w); n != 1 {
		t.Fatalf("a files kill a minute after the eBPF one: fresh %d, want 1", n)
	}
}

// A kill the eBPF programs report is joined to the container by its memory cgroup's id,
// classified by the memcg found at its limit, and the v1 poll's later oom_kill count of
// the same kill is not counted again. (The programs themselves run in
// test/integration/ebpf; here the records are built by hand.)
func TestBPFKillJoinedAndDeduplicated(t *testing.T) {
	a := testAgent(t, "cgroupv1-cgroupfs")
	a.bpf = &ebpfSource{a: a, probe: &ebpf.Probe{}} // not loaded: only marks --ebpf as on for the OOM path
	const uid = "7b2f1d2e-3c4d-4e5f-9a01-b2c3d4e5f6a7"
	const id = "2222222222222222222222222222222222222222222222222222222222222222"
	memDir := filepath.Join(a.o.CgroupRoot, "memory", "kubepods", "burstable", "pod"+uid, id)
	pods := []discovery.Pod{{UID: uid, Namespace: "shop", Name: "web-1", QOS: "Burstable", ProfileRef: "web",
		Hash: "0123456789abcdef", Interval: time.Second, Containers: []discovery.Container{{Name: "app", ID: "containerd://" + id}}}}
	t0 := time.Unix(1_800_000_000, 0)
	a.setPods(pods, discovery.Capacity{}, "", t0)
	g := &group{interval: time.Second, coll: cgroup.NewCollector(a.cg), pods: pods}
	defer g.coll.Close()
	ctx := context.Background()
	src := &cgroupSource{a: a}
	src.cycle(ctx, g, t0)

	var st syscall.Stat_t
	if err := syscall.Stat(memDir, &st); err != nil {
		t.Fatal(err)
	}
	a.st.mu.Lock()
	joined := a.st.ctrs[containerKey(uid, "app")].memcgID
	a.st.mu.Unlock()
	if joined != st.Ino {
		t.Fatalf("container joined to memcg %d, want its memory directory's inode %d", joined, st.Ino)
	}
	at := t0.Add(500 * time.Millisecond)
	a.bpf.onKill(ctx, ebpf.OOMKill{At: at, PID: 10, Comm: "stress", MemcgID: st.Ino, LimitMemcgID: st.Ino,
		AnonBytes: 30 << 20, FileBytes: 1 << 20, ShmemBytes: 4096})
	a.bpf.onKill(ctx, ebpf.OOMKill{At: at, PID: 11, MemcgID: st.Ino, LimitMemcgID: st.Ino + 1000})
	a.bpf.onKill(ctx, ebpf.OOMKill{At: at, PID: 12, MemcgID: st.Ino, LimitMemcgID: 0})
	a.bpf.onKill(ctx, ebpf.OOMKill{At: at.Add(-time.Hour), PID: 14, MemcgID: st.Ino, LimitMemcgID: st.Ino}) // long before: not the polled one
	a.bpf.onKill(ctx, ebpf.OOMKill{At: at, PID: 13, MemcgID: st.Ino + 5000})                                // not a sampled container

	// The poll then sees one of those kills in oom_control.
	body := "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n" // the fixture starts at 1
	if err := os.WriteFile(filepath.Join(memDir, "memory.oom_control"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	src.cycle(ctx, g, t0.Add(time.Second))

	c := a.report(debug.Filter{}).Pods[0].Containers[0]
	want := map[string]int64{"container": 2, "pod": 1, "node": 1}
	if len(c.OOMKills) != 3 || c.OOMKills["container"] != 2 || c.OOMKills["pod"] != 1 || c.OOMKills["node"] != 1 {
		t.Errorf("oom kills %v, want %v (the polled count deduplicated, the foreign memcg ignored)", c.OOMKills, want)
	}
	if n := a.oomq.len(); n != 4 {
		t.Fatalf("%d OOM events queued, want 4", n)
	}
	// The victim's details travel with the stream entry.
	ev := a.oomq.items[0].ev
	if ev.PID != 10 || ev.Comm != "stress" || ev.RSSBytes != 31<<20+4096 || ev.LimitCgroupID != st.Ino || ev.Kind != "container" {
		t.Errorf("first eBPF kill's entry %+v, want pid 10, comm stress, rss 31 MiB + 4 KiB, limit cgroup %d, kind container", ev, st.Ino)
	}
	if ev := a.oomq.items[2].ev; ev.Kind != "node" || ev.LimitCgroupID != 0 {
		t.Errorf("node OOM entry %+v, want kind node and no limit cgroup", ev)
	}
}
