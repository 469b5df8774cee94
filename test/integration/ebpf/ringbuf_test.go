package ebpf_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/ebpf"
)

// ringCapacity is about how many OOM records the 64 KiB ring buffer holds (88-byte
// record + 8-byte header each).
const ringCapacity = 64 << 10 / 96

// With nobody reading the ring buffer, OOM kills beyond its capacity are dropped by the
// program and counted in the map the agent exports as ballast_node_ebpf_lost_events_total;
// the records that fit are still delivered once a reader runs.
func TestRingBufferDropsAreCounted(t *testing.T) {
	requireRoot(t)
	p := ebpf.Open()
	t.Cleanup(func() { _ = p.Close() })
	if !p.Status().OOMAvailable() {
		t.Fatalf("no OOM program loaded: %s", p.Status())
	}
	if n := p.Lost(); n != 0 {
		t.Fatalf("lost %d before any kill", n)
	}
	const kills = ringCapacity + 150
	cg := newMemcg(t, 16<<20)
	start := time.Now()
	loop := cg.start(t, "oomloop", fmt.Sprint(kills))
	if err := loop.Wait(); err != nil {
		t.Fatalf("oom loop: %v", err)
	}
	t.Logf("%d OOM kills in %v", kills, time.Since(start).Round(time.Millisecond))
	lost := p.Lost()
	t.Logf("ring buffer capacity ≈ %d records; lost %d", ringCapacity, lost)
	// Kills elsewhere on the host may fill the buffer too, so only bounds are exact.
	if lost < kills-ringCapacity-10 || lost > kills {
		t.Errorf("lost %d records, want about %d (%d kills into a buffer of ≈ %d)", lost, kills-ringCapacity, kills, ringCapacity)
	}
}
