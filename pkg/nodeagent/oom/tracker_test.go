package oom

import (
	"os"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func load(t *testing.T, path string) cgroup.MemoryEvents {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := cgroup.ParseMemoryEvents(b)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// step is one observation fed to the tracker: a pod or a container reading.
type step struct {
	pod   bool
	key   string
	ev    cgroup.MemoryEvents
	after time.Duration
	want  *Event // nil: no event
}

func TestTracker(t *testing.T) {
	idle := load(t, "testdata/idle/memory.events.local")
	s1Pod, s1Ctr := load(t, "testdata/scenario1/pod/memory.events.local"), load(t, "testdata/scenario1/pod/container/memory.events.local")
	s3Pod, s3Ctr := load(t, "testdata/scenario3/pod/memory.events.local"), load(t, "testdata/scenario3/pod/container/memory.events.local")
	ev := func(oom, kill uint64) cgroup.MemoryEvents { return cgroup.MemoryEvents{OOM: oom, OOMKill: kill} }
	want := func(key string, k Kind, n uint64, after time.Duration) *Event {
		return &Event{Key: key, Dir: "/pod/" + key, Kind: k, Count: n, Time: t0.Add(after)}
	}

	cases := map[string][]step{
		"scenario1: container limit, oom.group counts the kill twice": {
			{pod: true, ev: s1Pod},
			{key: "a", ev: s1Ctr, want: want("a", KindContainer, 2, 0)},
		},
		"scenario3: pod limit, the kill is charged to the container": {
			{pod: true, ev: s3Pod},
			{key: "a", ev: s3Ctr, want: want("a", KindPod, 1, 0)},
		},
		"no oom anywhere: a node-level kill": {
			{pod: true, ev: idle},
			{key: "a", ev: ev(0, 1), want: want("a", KindNode, 1, 0)},
		},
		"own oom seen one read before the kill": {
			{key: "a", ev: ev(1, 0)},
			{key: "a", ev: ev(1, 1), after: time.Second, want: want("a", KindContainer, 1, time.Second)},
		},
		"own oom too old to explain the kill": {
			{key: "a", ev: ev(1, 0)},
			{key: "a", ev: ev(1, 1), after: DefaultPendingTTL + time.Second, want: want("a", KindNode, 1, DefaultPendingTTL+time.Second)},
		},
		"pod oom consumed by one container's kill": {
			{pod: true, ev: ev(1, 0)},
			{key: "b", ev: ev(0, 1), want: want("b", KindPod, 1, 0)},
			{key: "a", ev: ev(0, 1), after: time.Second, want: want("a", KindNode, 1, time.Second)},
		},
		"two pod ooms, two victims": {
			{pod: true, ev: ev(2, 0)},
			{key: "a", ev: ev(0, 1), want: want("a", KindPod, 1, 0)},
			{key: "b", ev: ev(0, 1), want: want("b", KindPod, 1, 0)},
		},
		"oom without a kill yields nothing": {
			{pod: true, ev: ev(3, 0)},
			{key: "a", ev: ev(5, 0)},
		},
		"counter went backwards: new baseline, no event": {
			{key: "a", ev: ev(0, 3), want: want("a", KindNode, 3, 0)},
			{key: "a", ev: ev(0, 1)},
			{key: "a", ev: ev(0, 2), want: want("a", KindNode, 1, 0)},
		},
		"burst: later own ooms of the same burst still explain kills": {
			{key: "a", ev: ev(2, 1), want: want("a", KindContainer, 1, 0)},
			{key: "a", ev: ev(3, 2), after: time.Second, want: want("a", KindContainer, 1, time.Second)},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newTracker(DefaultPendingTTL)
			tr.add("a", "/pod/a", "/pod", idle, idle)
			tr.add("b", "/pod/b", "/pod", idle, idle)
			for i, s := range steps {
				now := t0.Add(s.after)
				if s.pod {
					tr.observePod("/pod", s.ev, now)
					continue
				}
				got, ok := tr.observeContainer(s.key, s.ev, now)
				switch {
				case s.want == nil && ok:
					t.Errorf("step %d: unexpected event %+v", i, got)
				case s.want != nil && (!ok || got != *s.want):
					t.Errorf("step %d: got %+v (%v), want %+v", i, got, ok, *s.want)
				}
			}
		})
	}
}

func TestTrackerRemove(t *testing.T) {
	var zero cgroup.MemoryEvents
	tr := newTracker(DefaultPendingTTL)
	tr.add("a", "/pod/a", "/pod", zero, zero)
	tr.add("b", "/pod/b", "/pod", zero, zero)
	if pod, gone := tr.remove("a"); gone {
		t.Errorf("pod %s reported gone while b still uses it", pod)
	}
	if pod, gone := tr.remove("b"); !gone || pod != "/pod" {
		t.Errorf("last container removed: %q, %v", pod, gone)
	}
	if _, gone := tr.remove("b"); gone {
		t.Error("removing twice")
	}
	if _, ok := tr.observeContainer("a", cgroup.MemoryEvents{OOMKill: 1}, t0); ok {
		t.Error("event for a removed container")
	}
	// Re-adding takes the current counters as the baseline.
	tr.add("a", "/pod/a", "/pod", cgroup.MemoryEvents{OOMKill: 5}, zero)
	if e, ok := tr.observeContainer("a", cgroup.MemoryEvents{OOMKill: 6}, t0); !ok || e.Count != 1 {
		t.Errorf("after re-add: %+v, %v", e, ok)
	}
}
