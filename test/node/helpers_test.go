package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

const (
	release   = "ballast"
	namespace = "ballast-system"
	modeLabel = "ballast.tightlinesoftware.com/mode"
)

func chartDir() string { return filepath.Join(harness.RepoRoot(), "charts", "ballast") }

// helm runs the real helm binary against the node, its homes in a temp dir.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmErr(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func helmErr(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := tool("helm")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	home := filepath.Join(n.Dir, "helm")
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", n.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// userValues writes the values a user writes for a local one-node cluster (images imported
// by hand, no registry, no storage provisioner), plus the short readiness that makes
// profiles Sufficient within a minute, and returns the helm -f arguments.
func userValues(t *testing.T) []string {
	t.Helper()
	local := filepath.Join(n.Dir, "values-local-cluster.yaml")
	writeFile(t, local, `# A local cluster: images imported with ctr, nothing pulled, no StorageClass.
image:
  pullPolicy: Never
valkey:
  image:
    repository: ballastk8s/valkey
    tag: "8.0.1"
    pullPolicy: Never
  dataStorage:
    enabled: false
`)
	fast := filepath.Join(n.Dir, "values-fast.yaml")
	writeFile(t, fast, `# Test speed: 1 s sampling (Summary every 5 s), profiles Sufficient after 5 samples over 20 s,
# resize-mode pods stepped every 5 s; the agent's debug view served for pods/proxy; eBPF on.
defaultMetricsSources:
  kubernetesMetrics:
    pollInterval: "1s"
  kubeletSummary:
    pollInterval: "5s"
defaultClusterResourcePolicy:
  metrics:
    - {resource: cpu, field: request, aggregation: avg, headroom: "1.25"}
    - {resource: memory, field: request, aggregation: p75, headroom: "1.0"}
    - {resource: memory, field: limit, aggregation: p99, headroom: "1.2"}
    - {resource: ephemeral-storage, field: request, source: kubelet-summary, aggregation: p90, headroom: "1.0"}
  readiness:
    minDataPoints: 5
    minTimeSpan: 20s
    maxCV: "2.0"
  behaviors:
    resize:
      interval: 5s
telemetry:
  prometheus:
    enabled: true
# The pressure fast raise after 5 s of readings (five 1 s samples) instead of 30 s.
extraArgs:
  - --pressure-raise-sustain=`+pressureSustain+`
# kubectl ballast node reaches the agent through the API server's pods/proxy; the agent's
# eBPF memory signal (OOM victims, memcg reclaim stall: this v1 node's memory pressure).
agent:
  debug:
    proxy:
      enabled: true
  ebpf:
    enabled: true
`)
	return []string{"-f", filepath.Join(chartDir(), "values-local-testing.yaml"), "-f", local, "-f", fast}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadPod is the load app as an enrolled pod of identity (loadapp, component).
func loadPod(ns, name, component, mode string, args []string, req, lim corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			"app.kubernetes.io/name": "loadapp", "app.kubernetes.io/component": component, modeLabel: mode}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "app", Image: n.Images["ballast-loadapp"], ImagePullPolicy: corev1.PullNever, Args: args,
				Resources: corev1.ResourceRequirements{Requests: req, Limits: lim},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

func res(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func createNamespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if err := n.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

// runningPod creates p and waits until it is Running with its containers ready.
func runningPod(t *testing.T, ctx context.Context, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	if err := n.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	return waitRunning(t, ctx, p)
}

// waitRunning waits until the created pod p is Running with its containers ready.
func waitRunning(t *testing.T, ctx context.Context, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	harness.Eventually(t, 2*time.Minute, "pod "+p.Name+" running", func() error {
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.ContainersReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("phase %s, conditions %v, statuses %v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})
	return p
}

// profileOf returns the WorkloadProfile of identity (loadapp, component), or nil.
func profileOf(ctx context.Context, component string) (*ballastv1.WorkloadProfile, error) {
	list := &ballastv1.WorkloadProfileList{}
	if err := n.Client.List(ctx, list); err != nil {
		return nil, err
	}
	for i := range list.Items {
		tl := list.Items[i].Status.TupleLabels
		if tl["app.kubernetes.io/name"] == "loadapp" && tl["app.kubernetes.io/component"] == component {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no profile for loadapp/%s among %d", component, len(list.Items))
}

// stats returns the usage statistics of resource for container app of wp.
func stats(wp *ballastv1.WorkloadProfile, resourceName string) (ballastv1.UsageStats, bool) {
	for _, c := range wp.Status.Containers {
		if c.Name != "app" {
			continue
		}
		for _, s := range c.UsageStats {
			if s.Resource == resourceName {
				return s, true
			}
		}
	}
	return ballastv1.UsageStats{}, false
}

func recommendation(wp *ballastv1.WorkloadProfile, resourceName string) ballastv1.Recommendation {
	for _, c := range wp.Status.Containers {
		if c.Name == "app" {
			return c.Recommendations[resourceName]
		}
	}
	return ballastv1.Recommendation{}
}

// valkeyAuth holds the password of each Valkey address that needs one (valkeyAddr fills
// it from the chart's generated Secret).
var (
	valkeyAuthMu sync.Mutex
	valkeyAuth   = map[string]string{}
)

// valkeyCLI runs valkey-cli against addr ("host:port").
func valkeyCLI(ctx context.Context, addr string, args ...string) (string, error) {
	host, port, _ := strings.Cut(addr, ":")
	bin, err := exec.LookPath("valkey-cli")
	if err != nil {
		if bin, err = exec.LookPath("redis-cli"); err != nil {
			return "", err
		}
	}
	valkeyAuthMu.Lock()
	pw := valkeyAuth[addr]
	valkeyAuthMu.Unlock()
	base := []string{"-h", host, "-p", port, "--no-raw"}
	if pw != "" {
		base = append(base, "--user", store.ControlUser) // the chart's Valkey has no default user
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	if pw != "" {
		cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+pw) // the control plane's password
	}
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err != nil {
		err = fmt.Errorf("%s %v: %w: %s", bin, args, err, out)
	}
	if err == nil && (strings.HasPrefix(out, "(error)") || strings.Contains(out, "DENIED") || strings.HasPrefix(out, "ERR")) {
		err = fmt.Errorf("valkey-cli %v: %s", args, out) // the cli exits 0 on server errors
	}
	return out, err
}

// quantity parses q, failing the test on a malformed value.
func quantity(t *testing.T, what, q string) resource.Quantity {
	t.Helper()
	v, err := resource.ParseQuantity(q)
	if err != nil {
		t.Fatalf("%s %q: %v", what, q, err)
	}
	return v
}
