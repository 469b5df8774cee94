package fallback

import (
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func reading(s int) point {
	return point{At: at(s), Window: 10 * time.Second, Containers: map[string]usage{"app": {MilliCPU: 100, MemoryBytes: 1 << 20}}}
}

// TestHandOverBothWays plays an agent's life on a node second by second: it samples every
// second and flushes every 2 s (heartbeat TTL 6 s); metrics.k8s.io has a reading every 10 s,
// which the fallback offers every cycle. The agent is killed at 40 s and restarts at 100 s.
// Every sampling instant must be measured by exactly one path: the agent's flushed turns,
// and the fallback's readings between the agent's last flushed turn and its restart.
func TestHandOverBothWays(t *testing.T) {
	ps := &podState{}
	var hb series.Heartbeat
	known := false
	agentUpTo := func(s int) bool { return s <= 40 || s >= 100 }
	var written []time.Time
	agentOwned := map[time.Time]bool{}
	for now := 0; now <= 160; now++ {
		// The agent: flushes (and heartbeats) at even seconds while up; its Since is its
		// first turn after a (re)start, Through its newest flushed turn.
		if agentUpTo(now) && now%2 == 0 {
			since := at(0)
			if now >= 100 {
				since = at(100)
			}
			hb = series.Heartbeat{Node: "n", Since: since, Through: at(now), At: at(now), TTL: 6 * time.Second}
			known = true
		}
		// metrics.k8s.io: the newest reading (10 s resolution), offered every 3 s.
		if now%3 == 0 {
			ps.offer(reading(now / 10 * 10))
		}
		d := ps.decide(hb, known, at(now))
		for _, p := range d.write {
			written = append(written, p.At)
		}
	}
	for s := 0; s <= 160; s += 10 {
		if agentUpTo(s) {
			agentOwned[at(s)] = true
		}
	}
	seen := map[time.Time]int{}
	for _, w := range written {
		seen[w]++
		if agentOwned[w] {
			t.Errorf("reading at %s written by the fallback although the agent measured it", w.Sub(t0))
		}
	}
	for s := 0; s <= 160; s += 10 {
		switch n := seen[at(s)]; {
		case n > 1:
			t.Errorf("reading at %ds written %d times", s, n)
		case n == 0 && !agentOwned[at(s)]:
			t.Errorf("reading at %ds measured by nobody", s)
		}
	}
	if len(written) != 5 { // 50, 60, 70, 80, 90: after the last flushed turn (40), before the restart (100)
		t.Errorf("fallback wrote %d readings (%v), want the 5 between 40s and 100s", len(written), written)
	}
}

func TestOfferSkipsWrittenAndHeld(t *testing.T) {
	ps := &podState{cursor: at(10)}
	if ps.offer(reading(10)) {
		t.Error("a reading at the cursor was offered again")
	}
	if !ps.offer(reading(20)) || ps.offer(reading(20)) {
		t.Error("a new reading must be held once")
	}
	for i := 0; i < maxPending+5; i++ {
		ps.offer(reading(30 + i))
	}
	hb := series.Heartbeat{Node: "n", Since: at(0), Through: at(15), At: at(100), TTL: time.Hour}
	d := ps.decide(hb, true, at(100))
	if len(d.write) != 0 || d.dropped != 6 || len(ps.pending) != maxPending {
		t.Errorf("decide: %d written, %d dropped, %d held; want 0, 6, %d", len(d.write), d.dropped, len(ps.pending), maxPending)
	}
}

func TestWindowUpdates(t *testing.T) {
	pts := []point{reading(0), reading(10), reading(400)}
	pts[1].Containers["istio-proxy"] = usage{MilliCPU: 5, MemoryBytes: 2 << 20}
	l := series.DefaultLayout(30 * time.Minute) // 5-minute windows
	ups := windowUpdates("abc123", pts, map[string]bool{"app": true}, l.Window)
	if len(ups) != 4 { // app cpu+memory in two windows; the unknown container is skipped
		t.Fatalf("%d updates, want 4", len(ups))
	}
	for _, u := range ups {
		if err := u.Validate(l); err != nil {
			t.Error(err)
		}
		if u.Hist.FallbackN != u.Hist.N || u.Hist.FallbackResolutionSec != 10 {
			t.Errorf("%s: %d of %d samples marked fallback at %ds", u.Series, u.Hist.FallbackN, u.Hist.N, u.Hist.FallbackResolutionSec)
		}
	}
	if ups[0].Hist.N != 2 || ups[0].Series.Resource != series.ResourceCPU || ups[0].Hist.Max() != 100 {
		t.Errorf("first window %+v", ups[0])
	}
}
