// Package fallback is the acceptance test of the metrics.k8s.io fallback: the real
// metrics-server v0.8.0 scrapes the sandbox's kubelet stand-ins (/metrics/resource), the
// real ballast-control reads it through the aggregated API for pods on a kwok node without
// an agent, and a real ballast-node covers the other node until it is killed.
package fallback

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/recommend/feed"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

const (
	agentNode     = "sim-node-1"
	agentlessNode = "sim-node-2"
	ns            = "fleet"
)

func build(t *testing.T, dir string) (control, node string) {
	t.Helper()
	control, node = filepath.Join(dir, "ballast-control"), filepath.Join(dir, "ballast-node")
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/ballast-control", "./cmd/ballast-node")
	cmd.Dir = harness.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the binaries: %v\n%s", err, out)
	}
	return control, node
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestFallbackAcceptance walks the acceptance list in one sandbox.
func TestFallbackAcceptance(t *testing.T) {
	if _, err := harness.Tool("metrics-server"); err != nil {
		t.Skipf("%v (hack/tools/build.sh metrics-server)", err)
	}
	harness.Logger()
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	dir := t.TempDir()
	control, node := build(t, dir)
	s, err := sandbox.Start(ctx, sandbox.Options{Dir: dir, Nodes: 2, AgentlessNodes: 1, ControlBin: control, NodeBin: node,
		SampleInterval: time.Second, Progress: logWriter{t}, MetricsServer: true, MetricsResolution: 10 * time.Second,
		ControlArgs: []string{"--fallback-interval=2s", "--fallback-ephemeral-storage"},
		// 60 s samples would need an hour here; at metrics-server's 10 s minimum two
		// replicas give 12 samples a minute, so 20 samples over a minute make it Sufficient.
		Readiness: ballastv1.Readiness{MinDataPoints: 20, MinTimeSpan: "1m", MaxCV: "2.0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("component logs kept in %s", s.Logs())
			_ = os.Rename(s.Logs(), filepath.Join(os.TempDir(), fmt.Sprintf("fallback-logs-%d", time.Now().Unix())))
		}
		s.Stop()
	}()
	// The API server's node proxy refuses loopback addresses: ephemeral storage through it
	// can only be measured when the stand-ins have a non-loopback address.
	proxied := s.Nodes[1].Address != "127.0.0.1"
	if !proxied {
		t.Log("no non-loopback address on this machine: the node proxy cannot reach the stand-ins; checking that the condition says so")
	}
	rd := store.NewProfileReader(s.Valkey.URL())
	defer rd.Close()

	// The agent's first heartbeat before any pod starts: from then on the node counts as
	// covered, and only a lapse of that heartbeat can give core a fallback sample.
	if err := harness.Poll(ctx, 30*time.Second, "the agent's first heartbeat", func() error {
		hbs, _, err := rd.Heartbeats(ctx, time.Now())
		if hb, ok := hbs[agentNode]; err != nil || !ok || !hb.Live(time.Now()) {
			return fmt.Errorf("no live heartbeat of %s (%v)", agentNode, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	edge := sandbox.App{Name: "edge", Component: "api", Model: sandbox.ModelSteady, Replicas: 2, CPU: "1", Memory: "1Gi", Node: agentlessNode}
	core := sandbox.App{Name: "core", Component: "api", Model: sandbox.ModelSteady, Replicas: 1, CPU: "1", Memory: "1Gi", Node: agentNode}
	for _, a := range []sandbox.App{edge, core} {
		if err := s.Deploy(ctx, ns, a, "measure"); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []string{"edge", "core"} {
		if err := harness.Poll(ctx, 90*time.Second, a+" rolled out", func() error { return s.Rolled(ctx, ns, a) }); err != nil {
			t.Fatal(err)
		}
	}
	var lastRead feed.Profile
	share := func(app string) (*ballastv1.WorkloadProfile, feed.FallbackShare, error) {
		wp, err := s.Profile(ctx, ns, app)
		if err != nil || wp.Status.MeasurementHash == "" {
			return nil, feed.FallbackShare{}, fmt.Errorf("profile of %s: %v", app, err)
		}
		ps, err := rd.Read(ctx, wp.Status.MeasurementHash, time.Now(), 24*time.Hour)
		lastRead = feed.Of(ps.Series, ps.OOMs, ps.Nodes)
		return wp, lastRead.Fallback, err
	}
	// fallbackOf counts the fallback samples of one resource in the last read.
	fallbackOf := func(resource string) (fb, all int64) {
		for _, c := range lastRead.Containers {
			if h, ok := c.Series[resource].(*series.Histogram); ok {
				fb, all = fb+h.FallbackN, all+h.N
			}
		}
		return fb, all
	}

	// 1. Pods on the agentless node are measured through metrics.k8s.io and become
	// Sufficient; the profile says so.
	start := time.Now()
	var firstFallback time.Duration
	err = harness.Poll(ctx, 4*time.Minute, "edge Sufficient through the fallback", func() error {
		wp, fs, err := share("edge")
		if err != nil {
			return err
		}
		if fs.FallbackSamples > 0 && firstFallback == 0 {
			firstFallback = time.Since(start)
		}
		if fs.Samples == 0 || fs.FallbackSamples != fs.Samples {
			return fmt.Errorf("edge: %d of %d samples from the fallback, want all", fs.FallbackSamples, fs.Samples)
		}
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("edge is %s with %d samples (fallback %+v)", wp.Status.State, fs.Samples, wp.Status.Fallback)
		}
		f := wp.Status.Fallback
		if f == nil || f.Share != "100.0%" || f.Resolution == nil || f.Resolution.Duration < 5*time.Second || f.UncoveredPods != 2 {
			return fmt.Errorf("edge status.fallback %+v", f)
		}
		c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionAgentCoverage)
		if c == nil || c.Reason != ballastv1.ReasonMeasuredThroughMetricsAPI {
			return fmt.Errorf("edge AgentCoverage condition %+v", c)
		}
		if proxied {
			// Ephemeral storage through the node proxy (--fallback-ephemeral-storage).
			if fb, all := fallbackOf("ephemeral-storage"); fb == 0 || fb != all || !strings.Contains(c.Message, "through the kubelet Summary API") {
				return fmt.Errorf("edge ephemeral-storage: %d of %d samples from the fallback (%s)", fb, all, c.Message)
			}
		} else if !strings.Contains(c.Message, "ephemeral-storage is not measured: ") {
			return fmt.Errorf("edge AgentCoverage should say why ephemeral-storage is not measured: %s", c.Message)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("edge (agentless node): first fallback sample in the store %v after rollout, Sufficient after %v",
		firstFallback.Round(time.Second), time.Since(start).Round(time.Second))

	// 2. Pods on the agent node keep node-local samples only, unless the agent's heartbeat
	// expired meanwhile (a loaded machine can stall it past its 6 s TTL): the fallback then
	// measures the instants after the agent's last flushed turn, as designed, and
	// ballast-control must have logged the lapse.
	wp, fs, err := share("core")
	if err != nil {
		t.Fatal(err)
	}
	lapses := agentLapses(t, s)
	if fs.Samples == 0 || (lapses == 0 && (fs.FallbackSamples != 0 || wp.Status.Fallback != nil ||
		meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionAgentCoverage) != nil)) {
		t.Fatalf("core (agent node): %d samples, %d from the fallback, status.fallback %+v; want node-local only",
			fs.Samples, fs.FallbackSamples, wp.Status.Fallback)
	}
	if lapses > 0 {
		t.Logf("the agent's heartbeat expired %d time(s) under load before the kill; core has %d of %d samples from the fallback",
			lapses, fs.FallbackSamples, fs.Samples)
	}
	fb0cpu, _ := fallbackOf("cpu")
	fb0mem, _ := fallbackOf("memory")

	// 3. Kill the agent: its pod moves to the fallback within a few flush intervals; start
	// it again: it moves back. Every metrics.k8s.io reading between the agent's last
	// flushed turn and its restart's first turn is written exactly once, no other.
	corePods, err := s.AppPods(ctx, ns, "core")
	if err != nil || len(corePods) != 1 {
		t.Fatalf("core pods %v: %v", corePods, err)
	}
	readings := watchReadings(ctx, t, s, corePods[0])
	if err := s.StopAgent(agentNode, true); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	hbs, _, err := rd.Heartbeats(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	last := hbs[agentNode]
	var handOver time.Duration
	err = harness.Poll(ctx, 60*time.Second, "core measured through the fallback", func() error {
		if _, _, err := share("core"); err != nil {
			return err
		}
		if fb, _ := fallbackOf("cpu"); fb == 0 {
			return fmt.Errorf("no metrics.k8s.io fallback sample for core yet")
		}
		handOver = time.Since(killed)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := agentLapses(t, s); n != lapses+1 {
		t.Errorf("ballast-control logged the killed agent's heartbeat expiring %d time(s), want once", n-lapses)
	}
	t.Logf("agent killed: core's first metrics.k8s.io fallback sample in the store %v later (heartbeat TTL %v, flush interval 2s)",
		handOver.Round(100*time.Millisecond), last.TTL)
	// Stay down for a few readings, then restart.
	if err := harness.Poll(ctx, 60*time.Second, "three fallback readings", func() error {
		if _, _, err := share("core"); err != nil {
			return err
		}
		if fb, _ := fallbackOf("cpu"); fb < 3 {
			return fmt.Errorf("%d cpu fallback samples", fb)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.StartAgent(agentNode); err != nil {
		t.Fatal(err)
	}
	var back series.Heartbeat
	if err := harness.Poll(ctx, 30*time.Second, "agent heartbeat again", func() error {
		hbs, _, err := rd.Heartbeats(ctx, time.Now())
		if err != nil {
			return err
		}
		back = hbs[agentNode]
		if !back.Since.After(last.Through) || back.Through.IsZero() {
			return fmt.Errorf("heartbeat %+v", back)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// metrics.k8s.io keeps serving a reading for one resolution; wait until no reading from
	// before the restart can still arrive, then compare.
	var want int
	err = harness.Poll(ctx, 60*time.Second, "fallback samples = readings in the gap", func() error {
		want = readings.between(last.Through, back.Since)
		_, fs, err := share("core")
		if err != nil {
			return err
		}
		cpu, _ := fallbackOf("cpu")
		mem, _ := fallbackOf("memory")
		cpu, mem = cpu-fb0cpu, mem-fb0mem
		if time.Since(back.Since) < 25*time.Second || cpu != int64(want) || mem != int64(want) {
			return fmt.Errorf("core: %d cpu and %d memory fallback samples (%d in all), %d readings between %s and %s",
				cpu, mem, fs.FallbackSamples, want, last.Through.Format(time.TimeOnly), back.Since.Format(time.TimeOnly))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, settled, _ := share("core")
	eph, _ := fallbackOf("ephemeral-storage")
	t.Logf("hand-over: agent flushed through %s, restarted at %s; %d metrics.k8s.io readings in between, each written once; %d outside, none written; %d ephemeral-storage samples through the node proxy",
		last.Through.Format(time.TimeOnly), back.Since.Format(time.TimeOnly), want, readings.count()-want, eph)
	// Back to node-local: the fallback count stays put while the agent's grows.
	if err := harness.Poll(ctx, 30*time.Second, "core node-local again", func() error {
		wp, fs, err := share("core")
		if err != nil {
			return err
		}
		if fs.FallbackSamples != settled.FallbackSamples || fs.Samples <= settled.Samples+10 {
			return fmt.Errorf("fallback %d (was %d), samples %d (was %d)", fs.FallbackSamples, settled.FallbackSamples, fs.Samples, settled.Samples)
		}
		if meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionAgentCoverage) != nil {
			return fmt.Errorf("core still has the AgentCoverage condition")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// 4. metrics.k8s.io goes away: one condition on the affected profile, one event, no
	// crash, no log flood.
	if err := s.UnregisterMetricsAPI(ctx); err != nil {
		t.Fatal(err)
	}
	err = harness.Poll(ctx, 60*time.Second, "MetricsAPIUnavailable condition", func() error {
		wp, err := s.Profile(ctx, ns, "edge")
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionAgentCoverage)
		if c == nil || c.Reason != ballastv1.ReasonMetricsAPIUnavailable {
			return fmt.Errorf("edge AgentCoverage %+v", c)
		}
		t.Logf("condition: %s: %s", c.Reason, c.Message)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var evs []corev1.Event
	err = harness.Poll(ctx, 30*time.Second, "one MetricsAPIUnavailable event", func() error {
		list := &corev1.EventList{}
		if err := s.Client.List(ctx, list, client.MatchingFields{"reason": "MetricsAPIUnavailable"}); err != nil {
			return err
		}
		evs = list.Items
		if len(evs) != 1 || evs[0].Count > 1 || evs[0].InvolvedObject.Kind != "BallastConfig" {
			return fmt.Errorf("events %+v", evs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Ten more fallback cycles (2 s each) without the API: still one event, one log line,
	// and ballast-control alive.
	deadline := time.Now().Add(20 * time.Second)
	_ = harness.Poll(ctx, 25*time.Second, "ten cycles", func() error {
		if time.Now().Before(deadline) {
			return fmt.Errorf("waiting")
		}
		return nil
	})
	list := &corev1.EventList{}
	if err := s.Client.List(ctx, list, client.MatchingFields{"reason": "MetricsAPIUnavailable"}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Count > 1 {
		t.Errorf("after ten more cycles: %d events (count %d), want one", len(list.Items), list.Items[0].Count)
	}
	logText, err := os.ReadFile(filepath.Join(s.Logs(), "ballast-control.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(logText), "metrics.k8s.io is not served"); n != 1 {
		t.Errorf("ballast-control logged the outage %d times, want once", n)
	}
	if err := s.ControlAlive(); err != nil {
		t.Error(err)
	}
}

// agentLapses counts the times ballast-control logged the agent node's heartbeat as
// expired (the kill in step 3 comes after the count is taken).
func agentLapses(t *testing.T, s *sandbox.Sandbox) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Logs(), "ballast-control.log"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "node agent heartbeat expired") && strings.Contains(line, agentNode) {
			n++
		}
	}
	return n
}

// readingLog records every distinct PodMetrics timestamp of one pod, as metrics-server
// serves them, polled every 500 ms (its resolution here is 10 s, so none is missed).
type readingLog struct {
	ch chan time.Time
	ts map[time.Time]bool
}

func watchReadings(ctx context.Context, t *testing.T, s *sandbox.Sandbox, p corev1.Pod) *readingLog {
	mc, err := metricsclient.NewForConfig(s.Kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	rl := &readingLog{ch: make(chan time.Time, 1024), ts: map[time.Time]bool{}}
	go func() {
		for ctx.Err() == nil {
			pm, err := mc.MetricsV1beta1().PodMetricses(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err == nil {
				rl.ch <- pm.Timestamp.Time.UTC()
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return rl
}

func (rl *readingLog) drain() {
	for {
		select {
		case ts := <-rl.ch:
			rl.ts[ts.Truncate(time.Millisecond)] = true
		default:
			return
		}
	}
}

// between counts the readings with from < ts < to.
func (rl *readingLog) between(from, to time.Time) int {
	rl.drain()
	n := 0
	for ts := range rl.ts {
		if ts.After(from) && ts.Before(to) {
			n++
		}
	}
	return n
}

func (rl *readingLog) count() int {
	rl.drain()
	return len(rl.ts)
}
