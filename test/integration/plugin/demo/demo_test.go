// Package demo plays `make demo`'s scenario on the sandbox (real control plane,
// ballast-control, ballast-node on simulated nodes, Valkey) and checks that `kubectl
// ballast explain` explains the first-admission size of the pods in the scenario's new
// namespace: the policy, the profile the pod is bound to, and the values admission wrote.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

func build(t *testing.T, dir, cmd string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(cmd))
	b := exec.Command("go", "build", "-o", out, "./"+cmd)
	b.Dir = harness.RepoRoot()
	if msg, err := b.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", cmd, err, msg)
	}
	return out
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// explained is the part of `explain -o json` this test reads.
type explained struct {
	Profile struct {
		Name   string `json:"name"`
		Exists bool   `json:"exists"`
		State  string `json:"state"`
	} `json:"profile"`
	Policy struct {
		Winner string `json:"winner"`
	} `json:"policy"`
	Admission struct {
		Sized        bool `json:"sized"`
		FromTemplate bool `json:"fromTemplate"`
		Fields       []struct {
			Container, Resource, Field, Written string
			Changed                             bool
		} `json:"fields"`
	} `json:"admission"`
	Resize struct {
		State      string `json:"state"`
		LastResize string `json:"lastResize"`
		Events     []struct {
			Reason string `json:"reason"`
		} `json:"events"`
	} `json:"resize"`
}

func explainJSON(ctx context.Context, t *testing.T, kubeconfig, ns, pod string) explained {
	t.Helper()
	var out, errb bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}
	if code := ballast.Run(ctx, []string{"--kubeconfig", kubeconfig, "explain", "-n", ns, pod, "-o", "json"}, streams); code != 0 {
		t.Fatalf("explain %s/%s: exit %d: %s", ns, pod, code, errb.String())
	}
	var ex explained
	if err := json.Unmarshal(out.Bytes(), &ex); err != nil {
		t.Fatalf("explain %s/%s: %v", ns, pod, err)
	}
	return ex
}

func TestExplainDemoFirstAdmission(t *testing.T) {
	harness.Logger()
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	dir := t.TempDir()
	s, err := sandbox.Start(ctx, sandbox.Options{Dir: dir, Nodes: 2,
		ControlBin: build(t, dir, "cmd/ballast-control"), NodeBin: build(t, dir, "cmd/ballast-node"),
		SampleInterval: time.Second, Readiness: sandbox.DemoReadiness, Progress: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	sc := sandbox.DemoScenario()
	rep, err := sc.Run(ctx, s, s.Record(ctx, 2*time.Second), logWriter{t})
	if err != nil {
		t.Fatalf("%v (logs %s)", err, s.Logs())
	}
	if !rep.NewPodsSized {
		t.Fatalf("the scenario's new namespace was not sized at first admission (logs %s)", s.Logs())
	}
	pods, err := s.AppPods(ctx, sc.NewNamespace, sc.Shop.Name)
	if err != nil || len(pods) == 0 {
		t.Fatalf("pods of %s/%s: %v", sc.NewNamespace, sc.Shop.Name, err)
	}
	for _, p := range pods {
		ex := explainJSON(ctx, t, s.Kube.Kubeconfig, p.Namespace, p.Name)
		if ex.Policy.Winner != "ClusterResourcePolicy default" || ex.Profile.Name != p.Annotations[ballastv1.ProfileRefAnnotation] ||
			ex.Profile.State != ballastv1.StateSufficient || !ex.Admission.Sized || !ex.Admission.FromTemplate {
			t.Errorf("explain %s: policy %q profile %q (pod says %q) state %q sized %v fromTemplate %v", p.Name, ex.Policy.Winner,
				ex.Profile.Name, p.Annotations[ballastv1.ProfileRefAnnotation], ex.Profile.State, ex.Admission.Sized, ex.Admission.FromTemplate)
		}
		// Every value admission wrote is explained, and the explained value is the written
		// one (within 5%: the profile keeps being recomputed from new samples after admission).
		changed := 0
		for _, f := range ex.Admission.Fields {
			if !f.Changed {
				continue
			}
			changed++
			applied, ok := p.Annotations[ballastv1.AppliedAnnotation(f.Resource, f.Field)]
			if !ok {
				t.Errorf("explain %s: says admission writes %s %s %s, but the pod has no applied annotation", p.Name, f.Container, f.Resource, f.Field)
				continue
			}
			actual := actualValue(p, f.Container, corev1.ResourceName(f.Resource), f.Field)
			if actual.String() != applied {
				t.Errorf("pod %s: %s %s is %s, applied annotation %s", p.Name, f.Resource, f.Field, actual.String(), applied)
			}
			if !within(resource.MustParse(f.Written), actual, 0.05) {
				t.Errorf("explain %s: %s %s %s explained as %s, admitted as %s", p.Name, f.Container, f.Resource, f.Field, f.Written, actual.String())
			}
		}
		wrote := 0
		for k := range p.Annotations {
			if strings.HasPrefix(k, ballastv1.Prefix+"applied-") {
				wrote++
			}
		}
		if changed != wrote || changed == 0 {
			t.Errorf("explain %s: %d values explained as written, the pod has %d applied annotations", p.Name, changed, wrote)
		}
	}
	// The scenario's resize rung: explain shows the pod's resize state and Ballast's events.
	if sc.ResizeNamespace != "" && rep.Resize.Pod != "" {
		name := rep.Resize.Pod[strings.LastIndex(rep.Resize.Pod, "/")+1:] // "<namespace>/<pod>"
		ex := explainJSON(ctx, t, s.Kube.Kubeconfig, sc.ResizeNamespace, name)
		reasons := []string{}
		for _, e := range ex.Resize.Events {
			reasons = append(reasons, e.Reason)
		}
		if ex.Resize.State == "" || ex.Resize.LastResize == "" || !strings.Contains(strings.Join(reasons, ","), "Resized") {
			t.Errorf("explain %s/%s: resize state %q, last resize %q, events %v; want the state, the last resize and a Resized event (scenario: %+v)",
				sc.ResizeNamespace, rep.Resize.Pod, ex.Resize.State, ex.Resize.LastResize, reasons, rep.Resize)
		}
	}
	var out bytes.Buffer
	ballast.Run(ctx, []string{"--kubeconfig", s.Kube.Kubeconfig, "explain", "-n", pods[0].Namespace, pods[0].Name},
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	t.Logf("kubectl ballast explain -n %s %s\n%s", pods[0].Namespace, pods[0].Name, out.String())
	if sc.ResizeNamespace != "" && rep.Resize.Pod != "" {
		out.Reset()
		ballast.Run(ctx, []string{"--kubeconfig", s.Kube.Kubeconfig, "explain", "pod/" + rep.Resize.Pod[strings.LastIndex(rep.Resize.Pod, "/")+1:],
			"-n", sc.ResizeNamespace}, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		t.Logf("kubectl ballast explain -n %s %s\n%s", sc.ResizeNamespace, rep.Resize.Pod, out.String())
	}
}

func actualValue(p corev1.Pod, container string, res corev1.ResourceName, field string) resource.Quantity {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			if field == "limit" {
				return c.Resources.Limits[res]
			}
			return c.Resources.Requests[res]
		}
	}
	return resource.Quantity{}
}

func within(a, b resource.Quantity, frac float64) bool {
	x, y := a.AsApproximateFloat64(), b.AsApproximateFloat64()
	d := x - y
	if d < 0 {
		d = -d
	}
	return d <= frac*y
}
