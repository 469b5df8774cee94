package nodeagent

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/cgroupfixture"
)

func createNamespace(t testing.TB) string {
	t.Helper()
	ns := newName("ns")
	if err := srv.Kube.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// memValues is a container with working set ws (usage ws+inactive, inactive 20Mi).
func memValues(ws, limit uint64) cgroupfixture.Values {
	return cgroupfixture.Values{MemoryCurrent: ws + 20*mi, InactiveFileBytes: 20 * mi, MemoryPeak: ws + 30*mi, MemoryMax: limit}
}

// The real binary samples the pods of its node, joins containers to cgroups through pod
// UID + container ID, and writes the right values into the right series: cpu rate, working
// set and peak per long-running container (sidecars included, run-to-completion init
// containers never), ephemeral storage per container and the pod-level emptyDir series from
// the kubelet. Pods of other nodes are never read; a pod without profile-ref is held and
// filed once stamped; a pod that leaves the node stops being sampled.
func TestSamplesReachTheRightSeries(t *testing.T) {
	ensureCluster(t)
	ns, node := createNamespace(t), newName("node")
	web, webHash := newName("web"), newHash()
	gone, goneHash := newName("gone"), newHash()
	other, otherHash := newName("other"), newHash()
	createProfile(t, web, webHash)
	createProfile(t, gone, goneHash)
	createProfile(t, other, otherHash)

	s := newSim(t)
	kl := newKubeletStub(t)
	webPods := []*podSpec{
		{ns: ns, name: "web-1", node: node, profile: web, policy: "fast", containers: []string{"app"}, sidecars: []string{"proxy"},
			initContainer: "migrate", emptyDir: "cache"},
		{ns: ns, name: "web-2", node: node, profile: web, policy: "fast", containers: []string{"app"}, sidecars: []string{"proxy"},
			initContainer: "migrate", emptyDir: "cache"},
	}
	for _, ps := range webPods {
		ps.create(t)
		s.addPod(t, ps, 0, map[string]simCtr{
			"app":   {milli: 250, v: memValues(100*mi, 512*mi)},
			"proxy": {milli: 50, v: memValues(30*mi, 0)},
		})
		kl.add(ps, map[string][2]uint64{"app": {10 * mi, 1 * mi}, "proxy": {2 * mi, 0}}, map[string]uint64{"cache": 5 * mi})
	}
	gonePod := &podSpec{ns: ns, name: "gone-1", node: node, profile: gone, policy: "fast", containers: []string{"app"}}
	gonePod.create(t)
	s.addPod(t, gonePod, 0, map[string]simCtr{"app": {milli: 100, v: memValues(64*mi, 0)}})
	otherPod := &podSpec{ns: ns, name: "other-1", node: "another-node", profile: other, policy: "fast", containers: []string{"app"}}
	otherPod.create(t)
	s.addPod(t, otherPod, 0, map[string]simCtr{"app": {milli: 100, v: memValues(64*mi, 0)}})
	unstamped := &podSpec{ns: ns, name: "batch-1", node: node, policy: "fast", label: web, containers: []string{"batch"}}
	unstamped.create(t)
	s.addPod(t, unstamped, 0, map[string]simCtr{"batch": {milli: 200, v: memValues(80*mi, 0)}})

	a := startAgent(t, node, s.tree.Root, append(kl.flags(), "--debug-auth=false")...)
	r := storeReader(t)

	// Enough samples of every expected series.
	want := map[string]int64{
		"app/cpu/usage": 6, "app/memory/usage": 6, "app/memory/peak": 4, "app/ephemeral-storage/usage": 2,
		"proxy/cpu/usage": 6, "proxy/memory/usage": 6, "proxy/memory/peak": 4, "proxy/ephemeral-storage/usage": 2,
		"/ephemeral-storage/usage": 2,
	}
	var hs map[string]*series.Histogram
	eventually(t, 60*time.Second, "web series", func() error {
		var err error
		if hs, err = read(r, webHash); err != nil {
			return err
		}
		for tok, n := range want {
			if h := hs[tok]; h == nil || h.Count() < n {
				return fmt.Errorf("series %s has %v samples, want ≥ %d", tok, h, n)
			}
		}
		return nil
	})
	for tok := range hs {
		if _, ok := want[tok]; !ok {
			t.Errorf("unexpected series %s under the web profile (init container or unstamped pod leaked?)", tok)
		}
	}
	// Memory and storage are constant, so every sample is exact: min = max = the value.
	exact := map[string]float64{
		"app/memory/usage": 100 * mi, "proxy/memory/usage": 30 * mi,
		"app/ephemeral-storage/usage": 11 * mi, "proxy/ephemeral-storage/usage": 2 * mi, "/ephemeral-storage/usage": 5 * mi,
		// memory.peak does not move: the interval peak is the max of memory.current samples.
		"app/memory/peak": 120 * mi, "proxy/memory/peak": 50 * mi,
	}
	for tok, v := range exact {
		if h := hs[tok]; h.Min() != v || h.Max() != v {
			t.Errorf("%s: min %v max %v, want exactly %v", tok, h.Min(), h.Max(), v)
		}
	}
	// cpu: the test advances the counters every 20 ms in wall-clock time and the agent reads
	// them on its own clock, so one rate may be off by 2 × 20 ms over 1 s (4 %); the mean of
	// many is held to 10 %.
	for tok, milli := range map[string]float64{"app/cpu/usage": 250, "proxy/cpu/usage": 50} {
		h := hs[tok]
		if mean := h.Sum() / float64(h.Count()); math.Abs(mean-milli) > 0.1*milli {
			t.Errorf("%s: mean %.1fm, want %vm ± 10%%", tok, mean, milli)
		}
	}
	// A raised lifetime peak is the exact peak of the next interval.
	s.set(webPods[0].ids["app"], func(v *cgroupfixture.Values) { v.MemoryPeak = 300 * mi })
	eventually(t, 30*time.Second, "peak 300Mi", func() error {
		hs, err := read(r, webHash)
		if err != nil {
			return err
		}
		if got := hs["app/memory/peak"].Max(); got != 300*mi {
			return fmt.Errorf("app/memory/peak max %v", got)
		}
		return nil
	})
	// The pod of another node is never read.
	if ids, err := r.Series(context.Background(), otherHash); err != nil || len(ids) != 0 {
		t.Errorf("profile of another node's pod has series %v (err %v)", ids, err)
	}

	t.Run("debug view shows what the agent sees", func(t *testing.T) {
		rep, err := a.report()
		if err != nil {
			t.Fatal(err)
		}
		p := findPod(rep, ns, "web-1")
		if p == nil || p.Hash != webHash || p.Interval != "1s" || len(p.Containers) != 2 {
			t.Fatalf("web-1 report %+v", p)
		}
		var app debug.ContainerReport // by name: the report lists sidecars first (sizing.LongRunning)
		for _, c := range p.Containers {
			if c.Name == "app" {
				app = c
			}
		}
		wantDir := s.tree.ContainerDir(webPods[0].uid, "Burstable", webPods[0].ids["app"])
		if app.Name != "app" || app.CgroupMemory != wantDir || !app.OOMWatched {
			t.Errorf("app report %+v, want cgroup %s and an OOM watch", app, wantDir)
		}
		signals := map[string]float64{}
		for _, l := range app.Last {
			signals[l.Signal] = l.Value
		}
		if signals["memory/usage"] != 100*mi || signals["ephemeral-storage/usage"] != 11*mi || signals["cpu/usage"] == 0 {
			t.Errorf("last samples %v", signals)
		}
		text := getText(t, a, "?format=text&pod="+ns+"/web-1")
		for _, wantText := range []string{ns + "/web-1", wantDir, "memory/usage", "100.00Mi", "Valkey:", "Buffer:"} {
			if !strings.Contains(text, wantText) {
				t.Errorf("text view lacks %q:\n%s", wantText, text)
			}
		}
		if strings.Contains(text, "gone-1") {
			t.Errorf("pod filter ignored:\n%s", text)
		}
		t.Logf("text view:\n%s", text)
	})

	t.Run("unstamped pod is held, then filed once stamped", func(t *testing.T) {
		var held int64
		eventually(t, 30*time.Second, "pending samples of the unstamped pod", func() error {
			rep, err := a.report()
			if err != nil {
				return err
			}
			p := findPod(rep, ns, "batch-1")
			if p == nil || !p.Unbound || p.Interval != "1s" {
				return fmt.Errorf("pod report %+v", p)
			}
			held = recorded(rep, "", unstamped.uid, "batch", "memory", "usage")
			if held < 3 {
				return fmt.Errorf("%d samples held", held)
			}
			return nil
		})
		unstamped.annotate(t, ballastv1.ProfileRefAnnotation, profileName(web))
		eventually(t, 30*time.Second, "filed samples", func() error {
			hs, err := read(r, webHash)
			if err != nil {
				return err
			}
			h := hs["batch/memory/usage"]
			if h == nil || h.Count() < held {
				return fmt.Errorf("batch/memory/usage %v, want ≥ %d samples", h, held)
			}
			if h.Min() != 80*mi || h.Max() != 80*mi {
				return fmt.Errorf("batch/memory/usage min %v max %v", h.Min(), h.Max())
			}
			return nil
		})
	})

	t.Run("a pod that leaves the node stops being sampled", func(t *testing.T) {
		gonePod.delete(t)
		// Label removal (un-enrollment) takes the pod out of the watch too.
		patchLabels(t, unstamped, map[string]any{ballastv1.ModeLabel: nil})
		eventually(t, 30*time.Second, "pods gone from the debug view", func() error {
			rep, err := a.report()
			if err != nil {
				return err
			}
			for _, name := range []string{"gone-1", "batch-1"} {
				if findPod(rep, ns, name) != nil {
					return fmt.Errorf("%s still listed", name)
				}
			}
			return nil
		})
		// A sampling turn that began before the agent saw the removal may still file one
		// sample of the pod (taken while it ran there), flushed with the turn: the baseline
		// is taken once the other pods' series have moved on by two turns.
		webBase := countOf(t, r, webHash, "app/memory/usage")
		eventually(t, 30*time.Second, "a turn after the removal flushed", func() error {
			if n := countOf(t, r, webHash, "app/memory/usage"); n < webBase+2 {
				return fmt.Errorf("web app/memory/usage %d", n)
			}
			return nil
		})
		base := countOf(t, r, goneHash, "app/memory/usage")
		webBase = countOf(t, r, webHash, "app/memory/usage")
		// Meanwhile the agent keeps sampling the other pods (so the check below can fail).
		eventually(t, 30*time.Second, "web keeps growing", func() error {
			if n := countOf(t, r, webHash, "app/memory/usage"); n < webBase+6 {
				return fmt.Errorf("web app/memory/usage %d", n)
			}
			return nil
		})
		if n := countOf(t, r, goneHash, "app/memory/usage"); n != base {
			t.Errorf("removed pod still sampled: %d samples, was %d", n, base)
		}
	})
}

func getText(t testing.TB, a *agent, query string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.debug+debug.Path+query, nil)
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("text view: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return string(b)
}

func findPod(rep debug.Report, ns, name string) *debug.PodReport {
	for i := range rep.Pods {
		if rep.Pods[i].Namespace == ns && rep.Pods[i].Name == name {
			return &rep.Pods[i]
		}
	}
	return nil
}

// recorded returns the agent's sample count of one series (by profile hash, or pod UID
// for an unbound pod).
func recorded(rep debug.Report, hash, pod, container, resource, signal string) int64 {
	for _, s := range rep.Series {
		if s.Profile == hash && s.Pod == pod && s.Container == container && s.Resource == resource && s.Signal == signal {
			return s.Recorded
		}
	}
	return 0
}

func countOf(t testing.TB, r interface {
	Read(context.Context, string, time.Time) (map[series.SeriesID]*series.Histogram, error)
}, hash, token string) int64 {
	t.Helper()
	hs, err := r.Read(context.Background(), hash, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for id, h := range hs {
		if id.Token() == token {
			return h.Count()
		}
	}
	return 0
}

// readSeries returns one series' histogram, nil when it has none.
func readSeries(t testing.TB, r *store.Reader, hash, token string) *series.Histogram {
	t.Helper()
	hs, err := read(r, hash)
	if err != nil {
		t.Fatal(err)
	}
	return hs[token]
}

func patchLabels(t testing.TB, ps *podSpec, labels map[string]any) {
	t.Helper()
	ps.patch(t, map[string]any{"metadata": map[string]any{"labels": labels}})
}
