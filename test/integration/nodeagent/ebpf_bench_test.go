package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkEBPFAgentCPU measures the real agent's CPU (utime+stime of the process) with
// --ebpf off and on, in one run, over a 10 s window on an idle pod and over a 10 s window
// while a container's writer keeps its 32 MiB memcg in limit reclaim (1 s sampling, the
// pod's real v1 memory cgroups). -benchtime 1x.
//
//	go test -run '^$' -bench EBPFAgentCPU -benchtime 1x ./test/integration/nodeagent/
func BenchmarkEBPFAgentCPU(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: real memory cgroups, a bind mount and BPF programs")
	}
	ensureCluster(b)
	const window = 10 * time.Second
	for _, on := range []bool{false, true} {
		for _, load := range []string{"idle", "reclaim"} {
			b.Run(fmt.Sprintf("ebpf=%v/%s", on, load), func(b *testing.B) {
				ns, node := createNamespace(b), newName("node")
				prof := newName("bench")
				createProfile(b, prof, newHash())
				pod := &podSpec{ns: ns, name: "bench-1", node: node, profile: prof, policy: "fast", containers: []string{"app", "side"}}
				pod.create(b)
				rp := newRealPod(b, pod)
				if err := os.WriteFile(filepath.Join(rp.dirs["app"], "memory.limit_in_bytes"), []byte("33554432"), 0o644); err != nil {
					b.Fatal(err)
				}
				args := []string{"--debug-auth=false", "--cgroup-version", "v1"}
				if on {
					args = append(args, "--ebpf")
				}
				a := startAgentWrapped(b, rp.wrap(), node, rp.root, args...)
				eventually(b, 30*time.Second, "sampling", func() error {
					rep, err := a.report()
					if err != nil {
						return err
					}
					if p := findPod(rep, ns, pod.name); p == nil || len(p.Containers) != 2 || len(p.Containers[0].Last) == 0 {
						return fmt.Errorf("not sampled yet")
					}
					return nil
				})
				pid := a.cmd.Process.Pid
				stop := make(chan struct{})
				done := make(chan int)
				go func() {
					runs := 0
					defer func() { done <- runs }()
					if load != "reclaim" {
						<-stop
						return
					}
					file := filepath.Join(b.TempDir(), "pagecache")
					for {
						select {
						case <-stop:
							return
						default:
						}
						_ = rp.run(b, "app", "write", "BALLAST_HELPER_FILE="+file).Wait()
						runs++
					}
				}()
				b.ResetTimer()
				for range b.N {
					before := procCPU(b, pid)
					timer := time.NewTimer(window)
					<-timer.C // the measured window itself, not a synchronisation
					cpu := procCPU(b, pid) - before
					b.ReportMetric(float64(cpu.Milliseconds())/window.Seconds()/10, "agent-%cpu")
				}
				b.StopTimer()
				close(stop)
				b.ReportMetric(float64(<-done), "writer-runs")
			})
		}
	}
}
