package ebpf_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
)

// BenchmarkReclaimWorkload runs a reclaim-heavy workload (192 MiB written through the page
// cache of a 16 MiB memcg) with the programs detached and attached, in one run, and reports
// the workload's CPU time (the programs run in its context) and, attached, what the kernel
// counted for each program: events per op and ns per event.
//
//	go test -run '^$' -bench ReclaimWorkload -benchtime 10x ./test/integration/ebpf/
func BenchmarkReclaimWorkload(b *testing.B) {
	if syscall.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, on := range []bool{false, true} {
		name := "ebpf=off"
		if on {
			name = "ebpf=on"
		}
		b.Run(name, func(b *testing.B) {
			var p *ebpf.Probe
			if on {
				stats, err := ebpf.EnableRunStats()
				if err != nil {
					b.Fatal(err)
				}
				defer stats.Close()
				p = ebpf.Open()
				defer p.Close()
				if p.Status().Loaded() != 3 {
					b.Fatalf("eBPF: %s", p.Status())
				}
			}
			cg := newMemcg(b, 16<<20)
			file := filepath.Join(b.TempDir(), "pagecache")
			var cpu time.Duration
			b.ResetTimer()
			for range b.N {
				cmd := cg.start(b, "write", file)
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				u := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				cpu += time.Duration(u.Utime.Nano() + u.Stime.Nano())
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "workload-cpu-µs/op")
			if p == nil {
				return
			}
			st, err := p.ProgramStats()
			if err != nil {
				b.Fatal(err)
			}
			for hook, s := range st {
				if s.Runs == 0 {
					continue
				}
				short := filepath.Base(hook)
				b.ReportMetric(float64(s.Runs)/float64(b.N), short+"-events/op")
				b.ReportMetric(float64(s.Runtime.Nanoseconds())/float64(s.Runs), short+"-ns/event")
			}
		})
	}
}

// BenchmarkStallLookup is the agent's per-container cost each cycle: one map lookup.
func BenchmarkStallLookup(b *testing.B) {
	if syscall.Geteuid() != 0 {
		b.Skip("needs root")
	}
	p := ebpf.Open()
	defer p.Close()
	if !p.Status().StallAvailable() {
		b.Fatalf("eBPF: %s", p.Status())
	}
	src := ebpf.NewStallSource(p)
	targets := make([]ebpf.StallTarget, 220) // a full node: 110 pods × 2 containers
	for i := range targets {
		targets[i] = ebpf.StallTarget{Key: "k", MemcgID: uint64(1000 + i)}
	}
	now := time.Now()
	b.ResetTimer()
	for i := range b.N {
		if _, errs, _ := src.Collect(b.Context(), now.Add(time.Duration(i)*time.Second), targets); len(errs) > 0 {
			b.Fatal(errs[0])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/220, "ns/container")
}
