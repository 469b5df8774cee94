package nodeagent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/test/cgroupfixture"
)

// newSimUnder is newSim for a kubelet whose cgroupRoot is /<kubeletRoot>.
func newSimUnder(t testing.TB, kubeletRoot string) *sim {
	t.Helper()
	tree, err := cgroupfixture.NewUnder(t.TempDir(), kubeletRoot)
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{tree: tree, ctrs: map[string]*simCtr{}, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	t.Cleanup(func() { close(s.stop); <-s.done })
	return s
}

// cgroupSourceDetail is the cgroup source's line of the agent's debug view.
func cgroupSourceDetail(a *agent) (string, error) {
	rep, err := a.report()
	if err != nil {
		return "", err
	}
	for _, s := range rep.Sources {
		if s.Name == cgroup.SourceName {
			return s.Detail, nil
		}
	}
	return "", fmt.Errorf("no cgroup source in the debug view: %+v", rep.Sources)
}

// The real binary on a node whose kubelet runs with --cgroup-root=/ballast-custom: the
// pods are below ballast-custom/kubepods. Read from the kubelet's /configz (no setting), or
// given with --kubelet-cgroup-root, the root leads the agent to the pods and their samples
// reach the store; with neither (a kubelet that does not serve /configz) the agent starts,
// says in its log and debug view that no kubepods exists where it looked, and records
// nothing.
func TestKubeletCgroupRoot(t *testing.T) {
	ensureCluster(t)
	const kroot = "ballast-custom"
	run := func(t *testing.T, configz bool, extra ...string) (*agent, string) {
		ns, node := createNamespace(t), newName("node")
		name, hash := newName("app"), newHash()
		createProfile(t, name, hash)
		s := newSimUnder(t, kroot)
		kl := newKubeletStub(t)
		if configz {
			kl.configz = `{"kubeletconfig":{"cgroupRoot":"/` + kroot + `","cgroupDriver":"cgroupfs"}}`
		}
		ps := &podSpec{ns: ns, name: "app-1", node: node, profile: name, policy: "fast", containers: []string{"app"}}
		ps.create(t)
		s.addPod(t, ps, 0, map[string]simCtr{"app": {milli: 100, v: memValues(64*mi, 0)}})
		a := startAgent(t, node, s.tree.Root, append(append(kl.flags(), "--debug-auth=false"), extra...)...)
		return a, hash
	}
	sampled := func(t *testing.T, a *agent, hash, wantDetail string) {
		r := storeReader(t)
		eventually(t, 60*time.Second, "samples of the pod below the kubelet cgroupRoot", func() error {
			hs, err := read(r, hash)
			if err != nil {
				return err
			}
			for _, tok := range []string{"app/cpu/usage", "app/memory/usage"} {
				if h := hs[tok]; h == nil || h.Count() < 3 {
					return fmt.Errorf("series %s has %v samples, want ≥ 3", tok, h)
				}
			}
			return nil
		})
		d, err := cgroupSourceDetail(a)
		if err != nil || !strings.Contains(d, wantDetail) {
			t.Errorf("cgroup source detail %q, %v; want it to contain %q", d, err, wantDetail)
		}
	}
	t.Run("detected from the kubelet", func(t *testing.T) {
		a, hash := run(t, true)
		sampled(t, a, hash, "kubelet cgroupRoot /"+kroot+" (kubelet /configz)")
	})
	t.Run("flag", func(t *testing.T) {
		a, hash := run(t, false, "--kubelet-cgroup-root", "/"+kroot)
		sampled(t, a, hash, "kubelet cgroupRoot /"+kroot+" (flag)")
	})
	t.Run("neither", func(t *testing.T) {
		a, hash := run(t, false)
		a.waitReady()
		var d string
		eventually(t, 30*time.Second, "the locate errors of the unreachable pod", func() error {
			var err error
			if d, err = cgroupSourceDetail(a); err != nil {
				return err
			}
			n, err := a.metric("ballast_node_source_errors_total", `kind="locate"`)
			if err != nil || n < 1 {
				return fmt.Errorf("locate errors %v, %v", n, err)
			}
			return nil
		})
		for _, want := range []string{"kubelet cgroupRoot / (default)", "kubepods", "cgroup directory not found"} {
			if !strings.Contains(d, want) {
				t.Errorf("cgroup source detail %q lacks %q", d, want)
			}
		}
		if hs, err := read(storeReader(t), hash); err != nil || len(hs) != 0 {
			t.Errorf("samples recorded without the root: %v, %v", hs, err)
		}
	})
}
