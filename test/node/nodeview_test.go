package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/test/harness"
)

// testNodeView: `kubectl ballast node` (the plugin's command, run in process with the admin
// kubeconfig) reaches the real ballast-node agent of the real node through the API server's
// pods/proxy (the chart's agent.debug.proxy, a token minted for the debug service account)
// and shows what the agent sees of the measure-mode load pod: its identity and profile,
// the cgroup v1 paths of its container, last samples that match the load (150 MiB held,
// 200m of cpu), and series flushed to Valkey under the profile's measurement hash.
func testNodeView(t *testing.T, ctx context.Context) {
	load := &corev1.Pod{}
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: "measure", Name: "load"}, load); err != nil {
		t.Fatal(err)
	}
	wp, err := profileOf(ctx, "worker")
	if err != nil {
		t.Fatal(err)
	}
	var rep debug.Report
	var pr debug.PodReport
	var took time.Duration
	// The agent flushes every few seconds; a report is taken once it shows a flushed series.
	harness.Eventually(t, time.Minute, "the agent's report of measure/load with a flushed series", func() error {
		start := time.Now()
		out, errOut, code := plugin(ctx, "node", NodeName, "-o", "json")
		took = time.Since(start)
		if code != 0 {
			return fmt.Errorf("kubectl ballast node: exit %d: %s", code, errOut)
		}
		rep = debug.Report{}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return fmt.Errorf("decoding the report: %w\n%s", err, out)
		}
		found := false
		for _, p := range rep.Pods {
			if p.Namespace == "measure" && p.Name == "load" {
				pr, found = p, true
			}
		}
		if !found {
			return fmt.Errorf("measure/load not among the agent's %d pods", len(rep.Pods))
		}
		for _, s := range rep.Series {
			if s.Profile == wp.Status.MeasurementHash && s.Container == "app" && s.Resource == "memory" && s.Flushed > 0 {
				return nil
			}
		}
		return fmt.Errorf("no flushed memory series of profile hash %s: %+v", wp.Status.MeasurementHash, rep.Series)
	})
	t.Logf("kubectl ballast node %s -o json (in process, through pods/proxy): %s", NodeName, took.Round(time.Millisecond))
	if rep.Node != NodeName {
		t.Errorf("report of node %q, want %q", rep.Node, NodeName)
	}
	if !rep.Store.Connected || rep.Store.FlushedWindows == 0 {
		t.Errorf("store: connected %v, %d windows flushed, last error %q", rep.Store.Connected, rep.Store.FlushedWindows, rep.Store.LastError)
	}
	if pr.UID != string(load.UID) || pr.Mode != "measure" || pr.Hash != wp.Status.MeasurementHash || pr.ProfileRef != wp.Name {
		t.Errorf("pod measure/load: uid %s mode %q hash %q profileRef %q; want %s, measure, %s, %s",
			pr.UID, pr.Mode, pr.Hash, pr.ProfileRef, load.UID, wp.Status.MeasurementHash, wp.Name)
	}
	if pr.QOS != string(corev1.PodQOSBurstable) {
		t.Errorf("pod measure/load: qos %q, want Burstable", pr.QOS)
	}
	if len(pr.Containers) != 1 || pr.Containers[0].Name != "app" {
		t.Fatalf("containers of measure/load: %+v", pr.Containers)
	}
	c := pr.Containers[0]
	_, id, _ := strings.Cut(load.Status.ContainerStatuses[0].ContainerID, "://")
	for _, path := range []string{c.CgroupCPU, c.CgroupMemory} {
		// cgroup v1 with the cgroupfs driver: kubepods/burstable/pod<uid>/<container id>.
		if !strings.Contains(path, "kubepods/burstable/pod"+string(load.UID)+"/"+id) {
			t.Errorf("container app cgroup %q, want kubepods/burstable/pod%s/%s", path, load.UID, id)
		}
	}
	last := map[string]float64{}
	for _, s := range c.Last {
		last[s.Signal] = s.Value
	}
	// Last samples are single readings (one sampling interval), so the bands are wider than
	// the profile's statistics in testMeasure: cpu within [50m, 400m] of the 200m load on a
	// shared 2-core machine; memory usage at least the 150 MiB held (less the ≤2 % the load
	// app's own accounting may differ by) and under 150 MiB + 64 MiB of runtime and page cache.
	if cpu, ok := last["cpu/usage"]; !ok || cpu < 50 || cpu > 400 {
		t.Errorf("last cpu/usage %vm (present %v), want ≈ %dm: %+v", cpu, ok, loadMilliCPU, c.Last)
	}
	if mem, ok := last["memory/usage"]; !ok || mem < loadMiB*0.98*(1<<20) || mem > (loadMiB+64)*(1<<20) {
		t.Errorf("last memory/usage %.1f MiB (present %v), want [%.1f, %d] MiB: %+v", mem/(1<<20), ok, loadMiB*0.98, loadMiB+64, c.Last)
	}
	t.Logf("agent's view of measure/load: last samples %v; store %d windows flushed", last, rep.Store.FlushedWindows)

	// The table view of the same agent names the pod and the agent pod it came from.
	out, errOut, code := plugin(ctx, "node", NodeName, "--pod", "measure/load")
	if code != 0 || !strings.Contains(out, "measure/load") || !strings.Contains(out, namespace+"/ballast-node-") {
		t.Errorf("table view: exit %d\n%s%s", code, out, errOut)
	}
}

// plugin runs the kubectl plugin's command tree in process with the admin kubeconfig.
func plugin(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}
	code = ballast.Run(ctx, append([]string{"--kubeconfig", n.Kubeconfig}, args...), streams)
	return out.String(), errb.String(), code
}
