package twonode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/test/harness"
)

const measureNS = "measure-b"

// testNodeBMeasured: node-b's kubelet runs with cgroupRoot /ballast-tier-node-b and the chart
// sets no agent.cgroupRoot, so node-b's agent must read the root from its kubelet's /configz
// (nodes/configz). A measure-mode pod bound to node-b shows in `kubectl ballast node node-b`
// with its container's cgroups below ballast-tier-node-b/kubepods and cpu and memory
// samples; the agent's cgroup source names the root and where it came from.
func testNodeBMeasured(t *testing.T, ctx context.Context) {
	b := n.Nodes[1]
	createNamespace(t, ctx, measureNS)
	p := loadPod(measureNS, "load-b", "measure-b", []string{"-cpu-millis", "30", "-memory-mib", "16"})
	p.Labels[ballastv1.ModeLabel] = "measure"
	p.Spec.NodeName = b
	p = runningPod(t, ctx, p)
	var rep debug.Report
	var c debug.ContainerReport
	harness.Eventually(t, 2*time.Minute, "node-b's agent reporting samples of "+measureNS+"/load-b", func() error {
		out, errOut, code := plugin(ctx, "node", b, "-o", "json")
		if code != 0 {
			return fmt.Errorf("kubectl ballast node %s: exit %d: %s", b, code, errOut)
		}
		rep = debug.Report{}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return fmt.Errorf("decoding the report: %w", err)
		}
		for _, pr := range rep.Pods {
			if pr.Namespace == measureNS && pr.Name == "load-b" && len(pr.Containers) == 1 {
				c = pr.Containers[0]
				got := map[string]bool{}
				for _, s := range c.Last {
					got[s.Signal] = true
				}
				if got["cpu/usage"] && got["memory/usage"] {
					return nil
				}
				return fmt.Errorf("container %s: last samples %+v", c.Name, c.Last)
			}
		}
		return fmt.Errorf("%s/load-b not among the agent's %d pods", measureNS, len(rep.Pods))
	})
	_, id, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	want := "ballast-tier-" + b + "/kubepods/burstable/pod" + string(p.UID) + "/" + id
	for _, path := range []string{c.CgroupCPU, c.CgroupMemory} {
		if !strings.HasSuffix(path, want) {
			t.Errorf("container cgroup %q, want …/%s", path, want)
		}
	}
	for _, s := range rep.Sources {
		if s.Name == cgroup.SourceName {
			if !strings.Contains(s.Detail, "kubelet cgroupRoot /ballast-tier-"+b+" (kubelet /configz)") {
				t.Errorf("cgroup source detail %q: the root was not read from the kubelet", s.Detail)
			}
			t.Logf("node-b's cgroup source: %s", s.Detail)
		}
	}
	t.Logf("node-b's agent: %s/load-b last samples %+v, cgroup %s", measureNS, c.Last, c.CgroupMemory)
	if err := n.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: measureNS}}); err != nil {
		t.Error(err)
	}
}

// plugin runs the kubectl plugin's command tree in process with the admin kubeconfig.
func plugin(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}
	code = ballast.Run(ctx, append([]string{"--kubeconfig", n.Kubeconfig}, args...), streams)
	return out.String(), errb.String(), code
}
