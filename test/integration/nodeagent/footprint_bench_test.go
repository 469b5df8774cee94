package nodeagent

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/cgroupfixture"
)

// BenchmarkAgentFootprint runs the real binary on a full node (110 pods × 2 containers,
// each pod its own profile) sampled every 1 s and every 10 s (the kubelet Summary at the
// same cadence, floored at the default 10 s), and reports the process's CPU share and
// memory over a steady 30 s. Run it alone:
//
//	go test -run '^$' -bench AgentFootprint -benchtime 1x ./test/integration/nodeagent
func BenchmarkAgentFootprint(b *testing.B) {
	ensureCluster(b)
	ctx := context.Background()
	if err := srv.Kube.Client.Create(ctx, &ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "ten"},
		Spec: ballastv1.MetricsSourceSpec{Type: ballastv1.SourceTypeKubernetesMetrics, Config: ballastv1.MetricsSourceConfig{PollInterval: "10s"}}}); err != nil && !strings.Contains(err.Error(), "already exists") {
		b.Fatal(err)
	}
	if err := srv.Kube.Client.Create(ctx, &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "ten"},
		Spec: ballastv1.ResourcePolicySpec{Metrics: []ballastv1.MetricSpec{{Resource: "cpu", Field: "request", Source: "ten", Aggregation: "p95"}}}}); err != nil && !strings.Contains(err.Error(), "already exists") {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, policy string }{{"every-1s", "fast"}, {"every-10s", "ten"}} {
		b.Run(c.name, func(b *testing.B) {
			ns, node := createNamespace(b), newName("node")
			tree, err := cgroupfixture.New(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			kl := newKubeletStub(b)
			for i := range 110 {
				prof := newName("fp")
				createProfile(b, prof, newHash())
				ps := &podSpec{ns: ns, name: fmt.Sprintf("pod-%d", i), node: node, profile: prof, policy: c.policy,
					containers: []string{"app", "side"}, emptyDir: "cache"}
				ps.create(b)
				if err := tree.AddPod(ps.uid, ps.qos, 0); err != nil {
					b.Fatal(err)
				}
				for j, name := range ps.containers {
					v := cgroupfixture.Values{UsageUsec: uint64(1e6 * (i + j + 1)), MemoryCurrent: uint64(100+i) << 20, InactiveFileBytes: 10 << 20}
					if err := tree.AddContainer(ps.uid, ps.qos, ps.ids[name], v); err != nil {
						b.Fatal(err)
					}
				}
				kl.add(ps, map[string][2]uint64{"app": {10 * mi, mi}, "side": {mi, 0}}, map[string]uint64{"cache": 5 * mi})
			}
			// The defaults of a real node: flush every 10 s, kubelet Summary at most every 10 s.
			flags := append(kl.flags(), "--debug-auth=false", "--flush-interval", "10s", "--kubelet-min-interval", "10s", "--log-level", "info")
			a := startAgent(b, node, tree.Root, flags...)
			eventually(b, 60*time.Second, "all pods sampled", func() error {
				rep, err := a.report()
				if err != nil {
					return err
				}
				if len(rep.Pods) != 110 || rep.Sources[0].Runs < 2 {
					return fmt.Errorf("%d pods, %d cycles", len(rep.Pods), rep.Sources[0].Runs)
				}
				return nil
			})
			pid := a.cmd.Process.Pid
			cpu0, wall0 := procCPU(b, pid), time.Now()
			for b.Loop() {
				time.Sleep(30 * time.Second)
			}
			cpu := procCPU(b, pid) - cpu0
			wall := time.Since(wall0)
			mem := procMem(b, pid)
			b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
			b.ReportMetric(float64(mem["VmRSS:"])/(1<<20), "RSS-MiB")
			b.ReportMetric(float64(mem["VmHWM:"])/(1<<20), "peakRSS-MiB")
			// Anonymous memory (heap, stacks) vs clean pages of the mapped binary.
			b.ReportMetric(float64(mem["RssAnon:"])/(1<<20), "anonRSS-MiB")
			b.ReportMetric(float64(mem["RssFile:"])/(1<<20), "fileRSS-MiB")
			if a.exited() {
				b.Fatal("agent exited")
			}
		})
	}
}

// procCPU is a process's user + system time from /proc/<pid>/stat (clock ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procMem returns the memory fields of /proc/<pid>/status, in bytes.
func procMem(b *testing.B, pid int) map[string]int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			out[f[0]] = v << 10
		}
	}
	return out
}
