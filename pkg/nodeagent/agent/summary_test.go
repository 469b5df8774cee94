package agent

import (
	"context"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/kubeletstats"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/kubelet"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
	"github.com/ballastk8s/ballast/pkg/series"
)

// fakeSummary is a kubelet Summary source (named fake: the real one is exercised against
// a stub kubelet in test/integration/nodeagent). Each pod's stats are refreshed every
// refresh[uid] (0: fresh on every read, to the second as the JSON carries them); the value
// read is the refresh's number, so a repeated sample shows in the sum.
type fakeSummary struct {
	t0      time.Time
	refresh map[string]time.Duration
	reads   int
}

func (f *fakeSummary) Name() string { return kubelet.SourceName }

func (f *fakeSummary) Collect(_ context.Context, now time.Time, pods map[string]kubeletstats.Pod) (kubeletstats.Readings, []source.Error, error) {
	f.reads++
	var r kubeletstats.Readings
	for uid, p := range pods {
		at := now.Truncate(time.Second)
		if d := f.refresh[uid]; d > 0 {
			at = f.t0.Add(now.Sub(f.t0).Truncate(d))
		}
		n := uint64(at.Sub(f.t0)/time.Second) + 1
		for _, c := range p.Containers {
			r.Containers = append(r.Containers, kubeletstats.ContainerReading{PodUID: uid, Container: c,
				HasEphemeralStorage: true, EphemeralStorageBytes: n, EphemeralStorageTime: at})
		}
	}
	return r, nil, nil
}

// The Summary cadence follows the pods' intervals (SPEC §4.1) above the 10 s floor: a pod
// sampled every 12 s gets exactly one ephemeral-storage sample per 12 s window; a pod
// sampled every second gets one per kubelet refresh (every 15 s here), never the same
// stats twice. The clock is driven by hand, each timer firing 3 ms late.
func TestSummaryCadence(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0) // a multiple of 10 s, 12 s, 15 s and of the 5 min window
	const span = 120 * time.Second
	hashOf := map[string]string{"p1": "00000000000000a1", "p12": "00000000000000c2"}
	uidOf := map[string]string{"00000000000000a1": "p1", "00000000000000c2": "p12"}
	pod := func(uid string, iv time.Duration) discovery.Pod {
		return discovery.Pod{UID: uid, Namespace: "ns", Name: uid, ProfileRef: uid, Hash: hashOf[uid],
			Interval: iv, Containers: []discovery.Container{{Name: "app", ID: "containerd://" + uid}}}
	}
	cases := map[string]struct {
		pods      []discovery.Pod
		wantReads int
		want      map[string]int64 // samples per pod
	}{
		"12 s alone": {pods: []discovery.Pod{pod("p12", 12*time.Second)}, wantReads: 10,
			want: map[string]int64{"p12": 10}},
		"1 s alone, floored": {pods: []discovery.Pod{pod("p1", time.Second)}, wantReads: 12,
			want: map[string]int64{"p1": 8}},
		"12 s beside 1 s": {pods: []discovery.Pod{pod("p12", 12*time.Second), pod("p1", time.Second)}, wantReads: 12,
			want: map[string]int64{"p12": 10, "p1": 8}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := testAgent(t, "cgroupfs-v2")
			a.o.KubeletMinInterval = 10 * time.Second
			f := &fakeSummary{t0: t0, refresh: map[string]time.Duration{"p1": 15 * time.Second}}
			s := &kubeletSource{a: a, kube: f}
			a.setPods(tc.pods, discovery.Capacity{}, "", t0)
			var last time.Time
			for now := t0.Add(time.Millisecond); now.Before(t0.Add(span)); {
				now = s.turn(context.Background(), now, &last).Add(3 * time.Millisecond)
			}
			if f.reads != tc.wantReads {
				t.Errorf("%d Summary reads in %v, want %d", f.reads, span, tc.wantReads)
			}
			got, sums := map[string]int64{}, map[string]float64{}
			for _, u := range a.buf.Take(0) {
				if u.Series.Resource != series.ResourceEphemeralStorage {
					continue
				}
				uid := uidOf[u.Series.Profile]
				got[uid] += u.Hist.N
				sums[uid] += u.Hist.Sum()
			}
			for uid, n := range tc.want {
				if got[uid] != n {
					t.Errorf("%s: %d samples, want %d", uid, got[uid], n)
				}
			}
			// p1's refreshes are read at seconds 0, 15, …, 105: values 1, 16, …, 106, each once.
			if _, ok := tc.want["p1"]; ok {
				var want float64
				for s := 0; s < 120; s += 15 {
					want += float64(s + 1)
				}
				if sums["p1"] != want {
					t.Errorf("p1: sum %v, want %v (a refresh recorded twice or missed)", sums["p1"], want)
				}
			}
		})
	}
}
