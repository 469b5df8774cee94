package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestSandboxDrivesCgroups starts the sandbox without agents and checks the simulated side:
// Deployments are scheduled onto kwok nodes, run with container IDs, admitted by the real
// webhook, and their synthetic cgroups are readable by the agent's cgroup reader.
func TestSandboxDrivesCgroups(t *testing.T) {
	harness.Logger()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ballast-control")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ballast-control")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ballast-control: %v\n%s", err, out)
	}
	s, err := Start(ctx, Options{Dir: dir, Nodes: 1, ControlBin: bin, SampleInterval: time.Second,
		Readiness: DemoReadiness, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	app := App{Name: "shop", Component: "web", Model: ModelSteady, Replicas: 2, CPU: "1", Memory: "1Gi", MemLimit: "2Gi"}
	if err := s.Deploy(ctx, "team-a", app, "measure"); err != nil {
		t.Fatal(err)
	}
	if err := harness.Poll(ctx, 90*time.Second, "rollout", func() error { return s.Rolled(ctx, "team-a", "shop") }); err != nil {
		t.Fatalf("%v (logs in %s)", err, s.Logs())
	}
	// kwok keeps a node lease, renewed, so the controller-manager never marks nodes NotReady.
	node := s.Nodes[0].Name
	var first time.Time
	err = harness.Poll(ctx, 60*time.Second, "node lease renewed", func() error {
		l := &coordinationv1.Lease{}
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: "kube-node-lease", Name: node}, l); err != nil {
			return err
		}
		if l.Spec.RenewTime == nil {
			return fmt.Errorf("lease of %s has no renewTime", node)
		}
		if first.IsZero() {
			first = l.Spec.RenewTime.Time
		}
		if !l.Spec.RenewTime.After(first) {
			return fmt.Errorf("lease of %s not renewed since %s", node, first)
		}
		return nil
	})
	if err != nil {
		t.Errorf("%v (logs in %s)", err, s.Logs())
	}
	pods, _ := s.AppPods(ctx, "team-a", "shop")
	// The simulated kubelet reports the spec as allocated and actual, so pods/resize works.
	err = harness.Poll(ctx, 10*time.Second, "container resources in status", func() error {
		pods, _ = s.AppPods(ctx, "team-a", "shop")
		for _, p := range pods {
			cs := p.Status.ContainerStatuses
			if len(cs) == 0 || cs[0].Resources == nil || cs[0].AllocatedResources.Cpu().String() != "1" ||
				p.Status.ObservedGeneration != p.Generation {
				return fmt.Errorf("pod %s status %+v", p.Name, cs)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cgroup.Open(s.Nodes[0].CgroupRoot, cgroup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, p := range pods {
		if p.Annotations["ballast.tightlinesoftware.com/profile-ref"] == "" {
			t.Errorf("pod %s not stamped by the webhook", p.Name)
		}
		id := p.Status.ContainerStatuses[0].ContainerID
		err = harness.Poll(ctx, 10*time.Second, "cgroup readable", func() error {
			loc, err := r.LocateContainer(string(p.UID), cgroup.QOSClass(p.Status.QOSClass), id)
			if err != nil {
				return err
			}
			smp, err := r.ReadSample(loc, time.Now())
			if err != nil {
				return err
			}
			if !smp.HasMemory {
				return os.ErrNotExist
			}
			return nil
		})
		if err != nil {
			t.Errorf("pod %s (%s): %v", p.Name, p.Status.QOSClass, err)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }
