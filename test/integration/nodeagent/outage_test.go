package nodeagent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/test/cgroupfixture"
)

// stopValkey stops the shared Valkey and makes sure it runs again when the test ends.
func stopValkey(t *testing.T) (restart func()) {
	t.Helper()
	srv.Valkey.Stop()
	stopped := true
	restart = func() {
		if stopped {
			if err := srv.Valkey.Restart(); err != nil {
				t.Fatal(err)
			}
			stopped = false
		}
	}
	t.Cleanup(restart)
	return restart
}

// Valkey stops for a while and comes back: the agent keeps running and sampling into its
// buffer, then drains it; every sample recorded reaches the store exactly once and nothing
// is dropped.
func TestValkeyOutage(t *testing.T) {
	ensureCluster(t)
	ns, node := createNamespace(t), newName("node")
	prof, hash := newName("outage"), newHash()
	createProfile(t, prof, hash)
	s := newSim(t)
	pod := &podSpec{ns: ns, name: "app-1", node: node, profile: prof, policy: "fast", containers: []string{"app"}}
	pod.create(t)
	s.addPod(t, pod, 0, map[string]simCtr{"app": {milli: 100, v: memValues(50*mi, 0)}})
	a := startAgent(t, node, s.tree.Root, "--debug-auth=false")
	r := storeReader(t)

	eventually(t, 30*time.Second, "first samples", func() error {
		if n := countOf(t, r, hash, "app/memory/usage"); n < 3 {
			return fmt.Errorf("%d samples", n)
		}
		return nil
	})
	// Stop right after a flush succeeded, so no flush is in flight when the server dies (a
	// batch cut by the kill has an unknown outcome and may be counted twice on retry).
	ok0, _ := a.metric("ballast_node_flushes_total", `result="ok"`)
	eventually(t, 10*time.Second, "a successful flush", func() error {
		if ok, err := a.metric("ballast_node_flushes_total", `result="ok"`); err != nil || ok <= ok0 {
			return fmt.Errorf("ok flushes %v (err %v)", ok, err)
		}
		return nil
	})
	restart := stopValkey(t)
	// The harness's Valkey keeps nothing across a restart: what was written before the
	// outage is lost with the server, so the check below counts from here. Flushed counts
	// only move on a successful flush, and none can succeed now.
	before, err := a.report()
	if err != nil {
		t.Fatal(err)
	}
	tokens := []string{"app/memory/usage", "app/cpu/usage", "app/memory/peak"}
	flushedBefore := map[string]int64{}
	for _, tok := range tokens {
		parts := strings.SplitN(tok, "/", 3)
		flushedBefore[tok] = flushed(before, hash, "app", parts[1], parts[2])
	}
	// A value only the buffer can carry to the store.
	s.set(pod.ids["app"], func(v *cgroupfixture.Values) { *v = memValues(333*mi, 0) })
	eventually(t, 30*time.Second, "flushes failing, samples buffered", func() error {
		if a.exited() {
			t.Fatal("ballast-node exited during the outage")
		}
		failed, err := a.metric("ballast_node_flushes_total", `result="error"`)
		if err != nil {
			return err
		}
		unavailable, _ := a.metric("ballast_node_flushes_total", `result="unavailable"`)
		rep, err := a.report()
		if err != nil {
			return err
		}
		if failed+unavailable < 4 || rep.Buffer.Filed == 0 || rep.Store.Connected {
			return fmt.Errorf("failed flushes %v, buffered windows %d, connected %t", failed+unavailable, rep.Buffer.Filed, rep.Store.Connected)
		}
		return nil
	})
	s.set(pod.ids["app"], func(v *cgroupfixture.Values) { *v = memValues(50*mi, 0) })
	restart()
	r = storeReader(t)

	eventually(t, 30*time.Second, "buffer drained", func() error {
		rep, err := a.report()
		if err != nil {
			return err
		}
		if !rep.Store.Connected || rep.Store.ConsecutiveFailures > 0 {
			return fmt.Errorf("store %+v", rep.Store)
		}
		h := readSeries(t, r, hash, "app/memory/usage")
		if h == nil || h.Max() != 333*mi {
			return fmt.Errorf("outage samples not in the store yet: %v", h)
		}
		return nil
	})
	// Freeze the series: un-enrolling the pod stops its sampling; then everything recorded
	// must be in the store, exactly once.
	patchLabels(t, pod, map[string]any{"ballast.tightlinesoftware.com/mode": nil})
	eventually(t, 30*time.Second, "all recorded samples stored", func() error {
		rep, err := a.report()
		if err != nil {
			return err
		}
		if findPod(rep, ns, pod.name) != nil || rep.Buffer.Filed != 0 {
			return fmt.Errorf("pod still sampled or %d windows buffered", rep.Buffer.Filed)
		}
		for _, tok := range tokens {
			parts := strings.SplitN(tok, "/", 3)
			want := recorded(rep, hash, "", "app", parts[1], parts[2]) - flushedBefore[tok]
			if got := countOf(t, r, hash, tok); want <= 0 || got != want {
				return fmt.Errorf("%s: store has %d samples, agent recorded %d since the outage began", tok, got, want)
			}
		}
		return nil
	})
	for _, reason := range []string{"buffer_full", "expired", "rejected"} {
		if n, _ := a.metric("ballast_node_buffer_dropped_total", `reason="`+reason+`"`); n != 0 {
			t.Errorf("%v windows dropped (%s)", n, reason)
		}
	}
}

func flushed(rep debug.Report, hash, container, resource, signal string) int64 {
	for _, s := range rep.Series {
		if s.Profile == hash && s.Container == container && s.Resource == resource && s.Signal == signal {
			return s.Flushed
		}
	}
	return 0
}

// With Valkey down from the start and a buffer of three windows, the agent starts anyway,
// keeps the buffer bounded by dropping (and counting) the oldest windows, and writes what
// it kept once Valkey is reachable.
func TestValkeyOutageDropsWhenTheBufferIsFull(t *testing.T) {
	ensureCluster(t)
	ns, node := createNamespace(t), newName("node")
	prof, hash := newName("full"), newHash()
	createProfile(t, prof, hash)
	s := newSim(t)
	pod := &podSpec{ns: ns, name: "app-1", node: node, profile: prof, policy: "fast", containers: []string{"app", "side"}}
	pod.create(t)
	s.addPod(t, pod, 0, map[string]simCtr{"app": {milli: 100, v: memValues(50*mi, 0)}, "side": {milli: 10, v: memValues(10*mi, 0)}})
	restart := stopValkey(t)
	a := startAgent(t, node, s.tree.Root, "--debug-auth=false", "--buffer-max-windows", "3")

	eventually(t, 30*time.Second, "drops counted", func() error {
		if a.exited() {
			t.Fatal("ballast-node exited")
		}
		dropped, err := a.metric("ballast_node_buffer_dropped_total", `reason="buffer_full"`)
		if err != nil {
			return err
		}
		depth, _ := a.metric("ballast_node_buffer_depth", `tier="filed"`)
		if dropped == 0 || depth > 3 {
			return fmt.Errorf("dropped %v, depth %v", dropped, depth)
		}
		return nil
	})
	rep, err := a.report()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Buffer.Filed > 3 || rep.Buffer.FiledLimit != 3 || rep.Buffer.DroppedSamples["buffer_full"] == 0 {
		t.Errorf("buffer %+v", rep.Buffer)
	}
	restart()
	r := storeReader(t)
	eventually(t, 30*time.Second, "kept windows written", func() error {
		ids, err := r.Series(t.Context(), hash)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return fmt.Errorf("no series yet")
		}
		if ok, _ := a.metric("ballast_node_flushes_total", `result="ok"`); ok == 0 {
			return fmt.Errorf("no successful flush yet")
		}
		return nil
	})
}
