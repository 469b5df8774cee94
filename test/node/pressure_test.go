package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// The pressure step's load: 8 MiB held plus a 96 MiB file rewritten through the page cache
// under a 64 MiB limit, so the container reclaims its own dirty page cache at the limit
// for as long as it runs (never an OOM kill: page cache is reclaimable). One pressure raise,
// max(64Mi × 1.2, 64Mi + 100Mi) = 164Mi, holds the file, and the stall stops.
const (
	pressureLimit     = 64 << 20
	pressureRaised    = pressureLimit + 100<<20
	pressureFileMiB   = 96
	pressureStartsAt  = 8 * time.Second // after the container starts: the pod is relabelled by then
	pressureRaiseGoal = 15 * time.Second
	// pressureSustain is the tier's --pressure-raise-sustain (userValues).
	pressureSustain = "5s"
)

// testResizePressure: memory pressure on the real kubelet → in-place raise (issue 29). The
// chart runs the agent with eBPF (agent.ebpf.enabled in the tier's values), whose memcg
// reclaim-stall programs (tp_btf/mm_vmscan_memcg_reclaim_{begin,end}) are this cgroup v1
// node's memory pressure; the control plane runs with --pressure-raise-sustain=5s. A
// resize-mode pod of the load app (its namespace's policy keeps the profile Accruing, so no
// interval resize competes) starts rewriting a file larger than its memory limit
// 8 s after it starts; the agent writes its stall readings (source ebpf) to the profile's
// pressure stream, the fast raise raises its memory limit in place once 5 s of readings
// stay at or above 10 %, and the step reads the container's memory.limit_in_bytes until it
// changes. The figure is pressure start (the load app's log) → the raised limit in the
// cgroup.
func testResizePressure(t *testing.T, ctx context.Context) {
	if loaded := agentMetric(t, ctx, "ballast_node_ebpf_programs_loaded"); loaded != 3 {
		t.Fatalf("ballast_node_ebpf_programs_loaded %v, want 3 (agent.ebpf.enabled); the agent's eBPF log lines:\n%s",
			loaded, agentLog(t, ctx, "eBPF"))
	}
	written0 := max(agentMetric(t, ctx, "ballast_node_pressure_readings_total", `source="ebpf"`, `result="written"`), 0)
	createNamespace(t, ctx, "pressure")
	newPod := func() *corev1.Pod {
		pod := loadPod("pressure", "pressured", "pressure", "measure",
			[]string{"-cpu-millis", "10", "-memory-mib", "8", "-pressure-file-mib", strconv.Itoa(pressureFileMiB),
				"-pressure-dir", "/scratch", "-pressure-after", pressureStartsAt.String()},
			res("20m", "32Mi"), res("", "64Mi"))
		// The file is on the node's disk (an emptyDir), so its page cache is reclaimable.
		pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		return pod
	}
	// The namespace's policy never lets the profile turn Sufficient (readiness over an hour),
	// so the interval resize stays out: only a fast raise can change the limit here.
	pol := &ballastv1.ResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "pressure"},
		Spec: ballastv1.ResourcePolicySpec{
			Metrics: []ballastv1.MetricSpec{
				{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
				{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75", Headroom: "1.0"},
				{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
			},
			Readiness: ballastv1.Readiness{MinDataPoints: 5, MinTimeSpan: "1h", MaxCV: "2.0"},
			Behaviors: ballastv1.Behaviors{Resize: ballastv1.ResizeBehavior{Interval: "1h"}},
		}}
	if err := n.Client.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	// The webhook may not have seen the policy yet: create the pod until it is bound to it.
	// Measure mode until the profile exists, so the webhook stamps its name; relabelled to
	// resize before the pressure starts.
	var pod *corev1.Pod
	harness.Eventually(t, 30*time.Second, "pod bound to the slow policy", func() error {
		pod = newPod()
		_ = n.Client.Delete(ctx, pod.DeepCopy(), client.GracePeriodSeconds(0))
		harness.Eventually(t, 10*time.Second, "previous pod gone", func() error {
			return client.IgnoreNotFound(n.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
		})
		if err := n.Client.Create(ctx, pod); err != nil {
			return err
		}
		if got := pod.Annotations[ballastv1.PolicyRefAnnotation]; got != "pressure/slow" {
			return fmt.Errorf("policy-ref %q", got)
		}
		return nil
	})
	p := waitRunning(t, ctx, pod)
	if p.Annotations[ballastv1.ProfileRefAnnotation] == "" {
		t.Fatalf("no profile-ref on the pod: %v", p.Annotations)
	}
	if err := n.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+modeLabel+`":"resize"}}}`))); err != nil {
		t.Fatal(err)
	}
	relabelled := time.Now()
	id := p.Status.ContainerStatuses[0].ContainerID
	_, id, _ = strings.Cut(id, "://")
	dir, err := podCgroup("memory", *p)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, id, "memory.limit_in_bytes")
	before := readUint(t, file)
	if before != pressureLimit {
		t.Fatalf("memory.limit_in_bytes %d before the pressure, want %d", before, pressureLimit)
	}
	var after uint64
	deadline := time.Now().Add(50 * time.Second)
	for after = before; after == before; after = readUint(t, file) {
		if time.Now().After(deadline) {
			t.Fatalf("memory.limit_in_bytes still %d 50 s after the relabel; pod events %v; the agent's ebpf readings written %v (before %v); load app log:\n%s",
				before, podEvents(t, ctx, p), agentMetric(t, ctx, "ballast_node_pressure_readings_total", `source="ebpf"`, `result="written"`),
				written0, podLog(t, ctx, p))
		}
		time.Sleep(20 * time.Millisecond) // reading a cgroup file; the change time is the figure
	}
	raisedAt := time.Now()
	started := logTime(t, ctx, p, pressureStarted)
	if started == 0 {
		t.Fatalf("no pressure start in the load app's log:\n%s", podLog(t, ctx, p))
	}
	if relabelled.UnixMilli() >= started {
		t.Fatalf("the pressure started (%d ms) before the pod was relabelled to resize (%d ms): the figure would not be pressure → raise",
			started, relabelled.UnixMilli())
	}
	if after != pressureRaised {
		t.Fatalf("memory.limit_in_bytes %d → %d, want the one-step raise to %d (164Mi)", before, after, uint64(pressureRaised))
	}
	took := time.Duration(raisedAt.UnixMilli()-started) * time.Millisecond
	// The readings the agent wrote, from the profile's pressure stream: the first one's ID
	// is its XADD time (this machine's clock, like the load app's log).
	wp, err := profileOf(ctx, "pressure")
	if err != nil {
		t.Fatal(err)
	}
	addr := valkeyAddr(t, ctx)
	key := series.PressureKey(wp.Status.MeasurementHash)
	stream, err := valkeyCLI(ctx, addr, "XRANGE", key, "-", "+")
	if err != nil {
		t.Fatal(err)
	}
	first := firstStreamID(stream)
	if first == 0 || !strings.Contains(stream, `"`+series.PressureSourceEBPF+`"`) {
		t.Fatalf("no ebpf reading in %s:\n%s", key, stream)
	}
	readings := 0
	for _, id := range streamIDs(stream) {
		if firstStreamID(id) <= raisedAt.UnixMilli() {
			readings++
		}
	}
	t.Logf("pressure start → memory.limit_in_bytes %d → %d in the cgroup: %s (first ebpf reading in the stream after %d ms; %d readings by then; sustain %s, threshold 10 %%)",
		before, after, took.Round(time.Millisecond), first-started, readings, pressureSustain)
	harness.Eventually(t, 20*time.Second, "pressure raise recorded", func() error {
		cur := &corev1.Pod{}
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		st := cur.Status.ContainerStatuses[0]
		if st.RestartCount != 0 || st.ContainerID != p.Status.ContainerStatuses[0].ContainerID {
			return fmt.Errorf("container restarted (%d, %s)", st.RestartCount, st.ContainerID)
		}
		ev := podEvents(t, ctx, cur)
		if !slices.ContainsFunc(ev, func(e string) bool {
			return strings.HasPrefix(e, "ResizeRaised") && strings.Contains(e, "under sustained memory pressure") && strings.Contains(e, series.PressureSourceEBPF)
		}) {
			return fmt.Errorf("no ResizeRaised event for sustained ebpf pressure: %v", ev)
		}
		lim := cur.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
		if uint64(lim.Value()) != after {
			return fmt.Errorf("spec memory limit %s, cgroup %d", lim.String(), after)
		}
		if req := cur.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; req.Value() != 32<<20 {
			return fmt.Errorf("memory request %s, want 32Mi (only the limit is raised when they differ)", req.String())
		}
		if cur.Status.QOSClass != corev1.PodQOSBurstable {
			return fmt.Errorf("QoS class %s", cur.Status.QOSClass)
		}
		return nil
	})
	if r := controlCounter(t, ctx, "ballast_resize_raises_total", `trigger="pressure"`, `result="sent"`); r < 1 {
		t.Errorf("ballast_resize_raises_total{trigger=pressure,result=sent} %v, want ≥ 1", r)
	}
	if w := agentMetric(t, ctx, "ballast_node_pressure_readings_total", `source="ebpf"`, `result="written"`); w <= written0 {
		t.Errorf("ballast_node_pressure_readings_total{source=ebpf,result=written} %v, was %v before the pressure", w, written0)
	}
	if took > pressureRaiseGoal {
		t.Errorf("pressure start → raised limit in the cgroup %s, goal ≤ %s", took, pressureRaiseGoal)
	}
	// Once the limit holds the file, the rewrites hit cached pages: no second raise.
	time.Sleep(3 * time.Second)
	if cur := readUint(t, file); cur != after {
		t.Errorf("memory.limit_in_bytes %d 3 s after the raise to %d: raised again", cur, after)
	}
	if err := n.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
}

var (
	pressureStarted = regexp.MustCompile(`page-cache pressure started at (\d+) ms`)
	streamIDAll     = regexp.MustCompile(`"(\d{13})-\d+"`)
)

// streamIDs lists the entry IDs of valkey-cli's XRANGE output.
func streamIDs(out string) []string { return streamIDAll.FindAllString(out, -1) }

// logTime reads the first match of re (one group: Unix ms) in p's log; 0 when absent.
func logTime(t *testing.T, ctx context.Context, p *corev1.Pod, re *regexp.Regexp) int64 {
	t.Helper()
	m := re.FindStringSubmatch(podLog(t, ctx, p))
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

// podLog is p's log, read through the API server and the kubelet.
func podLog(t *testing.T, ctx context.Context, p *corev1.Pod) string {
	t.Helper()
	b, err := n.Clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("(reading the log: %v)", err)
	}
	return string(b)
}

// agentPods are the chart's ballast-node pods.
func agentPods(t *testing.T, ctx context.Context) []corev1.Pod {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ballast-node"}, ds); err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := n.Client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(ds.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// agentMetric sums the series of a metric whose line contains every one of match over the
// agent pods' /metrics (plain HTTP on the pod IP); -1 when no pod serves it.
func agentMetric(t *testing.T, ctx context.Context, name string, match ...string) float64 {
	t.Helper()
	sum, found := 0.0, false
	for _, p := range agentPods(t, ctx) {
		if p.Status.PodIP == "" {
			continue
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Status.PodIP+":8080/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Logf("metrics of %s: %v", p.Name, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if !(strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ")) || !all(line, match) {
				continue
			}
			f := strings.Fields(line)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				sum, found = sum+v, true
			}
		}
	}
	if !found {
		return -1
	}
	return sum
}

// agentLog returns the agent pods' log lines that contain sub.
func agentLog(t *testing.T, ctx context.Context, sub string) string {
	t.Helper()
	var out []string
	for _, p := range agentPods(t, ctx) {
		for _, line := range strings.Split(podLog(t, ctx, &p), "\n") {
			if strings.Contains(line, sub) {
				out = append(out, p.Name+": "+line)
			}
		}
	}
	return strings.Join(out, "\n")
}
