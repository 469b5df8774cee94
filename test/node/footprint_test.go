package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ballastk8s/ballast/test/harness"
)

// footprintWindow is how long each sampling interval is measured. Figures, not assertions:
// the goals (≤ 0.2 % of a core at 10 s, ≤ 1 % at 1 s, RSS ≤ 30 MiB) live in
// docs/benchmarks.md.
const footprintWindow = 40 * time.Second

// testFootprint measures ballast-node's cpu (its pod cgroup's cpuacct.usage) and RSS at
// 1 s and then 10 s sampling, beside the kubelet's own cpu over the same windows.
func testFootprint(t *testing.T, ctx context.Context) {
	measureFootprint(t, ctx, "1s")
	helm(t, "upgrade", release, chartDir(), "-n", namespace, "--reuse-values",
		"--set", "defaultMetricsSources.kubernetesMetrics.pollInterval=10s", "--wait", "--timeout", "3m")
	measureFootprint(t, ctx, "10s")
	helm(t, "upgrade", release, chartDir(), "-n", namespace, "--reuse-values",
		"--set", "defaultMetricsSources.kubernetesMetrics.pollInterval=1s", "--wait", "--timeout", "3m")
}

func measureFootprint(t *testing.T, ctx context.Context, interval string) {
	pods, err := n.Clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=agent"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("agent pods: %v %v", err, pods)
	}
	agent := pods.Items[0]
	cpuDir, err := podCgroup("cpuacct", agent)
	if err != nil {
		t.Fatal(err)
	}
	kubelet := n.kubelet.Pid()
	enrolled, _ := n.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: modeLabel})
	a0, k0, t0 := readUint(t, filepath.Join(cpuDir, "cpuacct.usage")), procCPU(t, kubelet), time.Now()
	// Not a synchronisation sleep: the measurement window itself.
	time.Sleep(footprintWindow)
	a1, k1, t1 := readUint(t, filepath.Join(cpuDir, "cpuacct.usage")), procCPU(t, kubelet), time.Now()
	wall := t1.Sub(t0).Seconds()
	agentPct := float64(a1-a0) / 1e9 / wall * 100
	kubeletPct := (k1 - k0).Seconds() / wall * 100
	mem := agentMemory(t, agent)
	mib := func(k string) float64 { return float64(mem[k]) / 1024 }
	t.Logf("footprint at %s sampling over %.0f s, %d enrolled pods: ballast-node %.2f %% of a core, RSS %.1f MiB "+
		"(anonymous %.1f, file %.1f); kubelet %.2f %% of a core",
		interval, wall, len(enrolled.Items), agentPct, mib("VmRSS"), mib("RssAnon"), mib("RssFile"), kubeletPct)
}

// podCgroup finds the pod's cgroup directory in the v1 controller hierarchy ctrl.
func podCgroup(ctrl string, p corev1.Pod) (string, error) {
	for _, pattern := range []string{"/sys/fs/cgroup/%s/kubepods/pod%s", "/sys/fs/cgroup/%s/kubepods/*/pod%s"} {
		m, _ := filepath.Glob(fmt.Sprintf(pattern, ctrl, p.UID))
		if len(m) == 1 {
			return m[0], nil
		}
	}
	return "", fmt.Errorf("no %s cgroup for pod %s (%s)", ctrl, p.Name, p.UID)
}

func readUint(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// procCPU is utime+stime of pid (clock ticks at 100 Hz).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, 41)+1:])) // after "(comm)"
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// agentMemory returns the memory lines (kB) of the agent process's /proc/<pid>/status.
func agentMemory(t *testing.T, p corev1.Pod) map[string]uint64 {
	t.Helper()
	dir, err := podCgroup("memory", p)
	if err != nil {
		t.Fatal(err)
	}
	mem := map[string]uint64{}
	harness.Eventually(t, 10*time.Second, "agent process found", func() error {
		procs, _ := filepath.Glob(filepath.Join(dir, "*", "cgroup.procs"))
		for _, f := range procs {
			b, _ := os.ReadFile(f)
			for _, pid := range strings.Fields(string(b)) {
				cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
				if !strings.Contains(string(cmd), "ballast-node") {
					continue
				}
				st, _ := os.ReadFile("/proc/" + pid + "/status")
				for _, line := range strings.Split(string(st), "\n") {
					if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(v, " kB") {
						mem[k], _ = strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					}
				}
				return nil
			}
		}
		return fmt.Errorf("no ballast-node process under %s", dir)
	})
	return mem
}
