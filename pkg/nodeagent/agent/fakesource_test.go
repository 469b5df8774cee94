package agent

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

// fakeSource is a made-up extra source (named fake: it reads nothing real). Every
// fakeInterval it "reads" a fixed ephemeral-storage usage for each running container of
// the agent's pods. It is everything adding a source takes: this type, its builder and
// one entry in the builders' list; it uses only what every source has (the agent's state,
// the shared loop, source.Collect for its metrics and health, the shared record path).
type fakeSource struct{ a *Agent }

const (
	fakeName     = "fake"
	fakeInterval = 5 * time.Millisecond
	fakeBytes    = 3 << 20
)

func newFakeSource(a *Agent) (Source, error) { return &fakeSource{a: a}, nil }

func (s *fakeSource) Name() string { return fakeName }
func (s *fakeSource) Detail() string {
	return "a fake of the unit tests, every " + fakeInterval.String()
}
func (s *fakeSource) Signals() []string { return []string{fakeName} }
func (s *fakeSource) Close() error      { return nil }

// Collect is the source.Source shape: one reading per container key.
func (s *fakeSource) Collect(_ context.Context, _ time.Time, keys []string) (map[string]float64, []source.Error, error) {
	out := make(map[string]float64, len(keys))
	for _, k := range keys {
		out[k] = fakeBytes
	}
	return out, nil, nil
}

// Run owns the fake's cadence: a turn every fakeInterval on the agent's shared loop.
func (s *fakeSource) Run(ctx context.Context) error {
	a := s.a
	return a.loop(ctx, nil, func(ctx context.Context, now time.Time) time.Time {
		a.st.mu.Lock()
		keys := make([]string, 0, len(a.st.ctrs))
		for k := range a.st.ctrs {
			keys = append(keys, k)
		}
		a.st.mu.Unlock()
		readings, _, err := source.Collect(ctx, a.units, s, now, keys)
		if err != nil {
			return now.Add(fakeInterval)
		}
		a.st.mu.Lock()
		defer a.st.mu.Unlock()
		for k, v := range readings {
			if cs := a.st.ctrs[k]; cs != nil {
				if ps := a.st.pods[cs.podUID]; ps != nil {
					a.recordLocked(ps.pod, cs, series.ResourceEphemeralStorage, series.SignalUsage, v, now, fakeName, nil)
				}
			}
		}
		return now.Add(fakeInterval)
	})
}

// An extra source registered beside the real ones (one more entry in the builders' list,
// nothing else changed) is declared to the debug view and the heartbeat, turns at its own
// cadence, and its samples go through the one buffer and flush into a real Valkey: every
// sample it recorded is in the store, counted once.
func TestFakeSourceIsSampledAndFlushed(t *testing.T) {
	v, err := harness.StartValkey()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	a := testAgent(t, "cgroupfs-v2")
	a.o.RedisURL, a.o.KubeletURL, a.o.EBPF = v.URL(), "", false
	a.store = &storeConn{lazy: store.NewLazy(v.URL()), redact: a.o.StoreConfig().Redactor()}
	t.Cleanup(a.store.close)

	// The registration line: cmd/ballast-node's list, plus the fake.
	if err := a.addSources([]SourceBuilder{CgroupSource, KubeletSource, OOMSource, EBPFSource, newFakeSource}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.closeSources() })
	var names []string
	for _, h := range a.units.Health() {
		names = append(names, h.Name)
	}
	if want := []string{"cgroup", "kubelet", "oom", "fake"}; !slices.Equal(names, want) { // no --ebpf: no ebpf source
		t.Errorf("debug view's sources %v, want %v", names, want)
	}
	if got := a.signals(); !slices.Equal(got, []string{"cpu", "memory", "oom", "fake"}) {
		t.Errorf("heartbeat signals %v", got)
	}

	const hash = "00000000000000f1"
	pods := []discovery.Pod{{UID: "u1", Namespace: "ns", Name: "web-1", ProfileRef: "web", Hash: hash, Interval: time.Second,
		Containers: []discovery.Container{{Name: "app", ID: "containerd://1"}, {Name: "side", ID: "containerd://2", Sidecar: true}}}}
	a.setPods(pods, discovery.Capacity{}, "", a.now())

	// Only the fake runs: the cgroup source's loop needs discovery (an API server).
	i := slices.IndexFunc(a.sources, func(s Source) bool { return s.Name() == fakeName })
	if i < 0 {
		t.Fatal("the fake is not among the agent's sources")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.sources[i].Run(ctx) }()
	fakeRuns := func() int64 {
		for _, h := range a.units.Health() {
			if h.Name == fakeName {
				return h.Runs
			}
		}
		return 0
	}
	for deadline := time.Now().Add(10 * time.Second); fakeRuns() < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("the fake turned %d times in 10s, want 5", fakeRuns())
		}
		time.Sleep(fakeInterval)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("fake Run: %v", err)
	}

	recorded := int64(testutil.ToFloat64(a.m.samples.WithLabelValues(series.ResourceEphemeralStorage, series.SignalUsage, fakeName)))
	if recorded < 2*5 {
		t.Fatalf("%d fake samples recorded after %d turns of two containers", recorded, fakeRuns())
	}
	rep := a.report(debug.Filter{})
	if c := rep.Pods[0].Containers[0]; len(c.Last) != 1 || c.Last[0].Source != fakeName || c.Last[0].Value != fakeBytes {
		t.Errorf("debug view's last samples of %s: %+v, want one from the fake", c.Name, c.Last)
	}

	now := a.now()
	a.flushOnce(context.Background(), now)
	if st := a.store.snapshot(); !st.connected || st.flushedSamples != recorded || a.buf.Stats().Filed != 0 {
		t.Fatalf("flush: %+v, %d windows still buffered; want all %d samples written", st, a.buf.Stats().Filed, recorded)
	}
	c, err := store.Open(v.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := store.NewReader(c, a.layout())
	if err != nil {
		t.Fatal(err)
	}
	hists, err := r.Read(context.Background(), hash, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for _, ctr := range []string{"app", "side"} {
		h := hists[series.SeriesID{Profile: hash, Container: ctr, Resource: series.ResourceEphemeralStorage, Signal: series.SignalUsage}]
		if h == nil || h.N == 0 {
			t.Errorf("no %s/ephemeral-storage/usage series in the store: %v", ctr, hists)
			continue
		}
		// The sums are exact (only bucket edges carry the histogram's error).
		if mean := h.Sum() / float64(h.Count()); mean != fakeBytes {
			t.Errorf("%s: stored mean %v, want %v", ctr, mean, float64(fakeBytes))
		}
		stored += h.N
	}
	if stored != recorded {
		t.Errorf("%d samples in the store, %d recorded by the fake", stored, recorded)
	}
}
