package nodeagent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/cgroupfixture"
)

// An OOM kill written into a container's memory.events(.local) reaches the profile's OOM
// stream within one second (inotify, not polling), for a container-limit kill and for a
// pod-limit kill, and the two are told apart.
func TestOOMKillReachesTheStreamWithinOneSecond(t *testing.T) {
	ensureCluster(t)
	ns, node := createNamespace(t), newName("node")
	prof, hash := newName("oom"), newHash()
	createProfile(t, prof, hash)
	s := newSim(t)
	// Sampled once a minute (no policy): the kill must not wait for a sampling cycle.
	pod := &podSpec{ns: ns, name: "hog-1", node: node, profile: prof, containers: []string{"app", "side"}}
	pod.create(t)
	s.addPod(t, pod, 512*mi, map[string]simCtr{
		"app":  {milli: 100, v: memValues(200*mi, 256*mi)},
		"side": {milli: 10, v: memValues(40*mi, 0)},
	})
	a := startAgent(t, node, s.tree.Root, "--debug-auth=false")
	eventually(t, 30*time.Second, "OOM watches", func() error {
		rep, err := a.report()
		if err != nil {
			return err
		}
		p := findPod(rep, ns, pod.name)
		if p == nil || p.Interval != "1m0s" {
			return fmt.Errorf("pod %+v", p)
		}
		for _, c := range p.Containers {
			if !c.OOMWatched {
				return fmt.Errorf("%s not watched yet", c.Name)
			}
		}
		return nil
	})
	r := storeReader(t)

	cases := []struct {
		container string
		kind      cgroupfixture.Kind
		limit     int64
	}{
		{"app", cgroupfixture.KindContainer, 256 * mi},
		{"side", cgroupfixture.KindPod, 0}, // the container has no limit of its own
	}
	var last string
	for i, c := range cases {
		start := time.Now()
		if err := s.tree.OOMKill(pod.uid, pod.qos, pod.ids[c.container], c.kind); err != nil {
			t.Fatal(err)
		}
		var rec store.OOMRecord
		until(t, start.Add(time.Second), fmt.Sprintf("%s kill of %s in the OOM stream", c.kind, c.container), func() error {
			recs, err := r.ReadOOM(context.Background(), hash, last)
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				return fmt.Errorf("no new entry")
			}
			rec = recs[0]
			return nil
		})
		t.Logf("kill %d reached the stream after %v", i+1, time.Since(start).Round(time.Millisecond))
		last = rec.ID
		ev := rec.Event
		if ev.Container != c.container || ev.Pod != ns+"/"+pod.name || ev.Node != node || ev.LimitBytes != c.limit || ev.Kind != string(c.kind) {
			t.Errorf("event %+v, want container %s pod %s/%s node %s limit %d kind %s", ev, c.container, ns, pod.name, node, c.limit, c.kind)
		}
		if minPeak := int64(memValues(40*mi, 0).MemoryCurrent); ev.PeakBytes < minPeak {
			t.Errorf("peak %d, want ≥ %d (memory.peak)", ev.PeakBytes, minPeak)
		}
	}
	eventually(t, 10*time.Second, "kinds told apart", func() error {
		rep, err := a.report()
		if err != nil {
			return err
		}
		got := map[string]map[string]int64{}
		for _, c := range findPod(rep, ns, pod.name).Containers {
			got[c.Name] = c.OOMKills
		}
		if got["app"]["container"] != 1 || got["side"]["pod"] != 1 || len(got["app"]) != 1 || len(got["side"]) != 1 {
			return fmt.Errorf("oom kills %v", got)
		}
		return nil
	})
	for kind, want := range map[string]float64{"container": 1, "pod": 1} {
		if n, _ := a.metric("ballast_node_oom_events_total", `kind="`+kind+`",result="written"`); n != want {
			t.Errorf("ballast_node_oom_events_total{kind=%q,result=written} = %v, want %v", kind, n, want)
		}
	}
}

// until polls f until it succeeds, failing at deadline.
func until(t testing.TB, deadline time.Time, what string, f func() error) {
	t.Helper()
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not by the deadline: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
