package ebpf

import (
	"context"
	"errors"
	"testing"
	"time"
)

// mapStalls stands in for the kernel map (the real map is exercised by
// test/integration/ebpf as root).
type mapStalls map[uint64]Stall

func (m mapStalls) Stall(id uint64) (Stall, bool, error) {
	if id == 666 {
		return Stall{}, false, errors.New("lookup failed")
	}
	s, ok := m[id]
	return s, ok, nil
}

func TestStallSourceDeltas(t *testing.T) {
	m := mapStalls{10: {Count: 4, TotalNs: 2e6, MaxNs: 1e6, ReclaimedPages: 100}}
	src := NewStallSource(m)
	t0 := time.Unix(1000, 0)
	targets := []StallTarget{{Key: "a", MemcgID: 10}, {Key: "idle", MemcgID: 11}, {Key: "bad", MemcgID: 666}}
	rd, errs, err := src.Collect(context.Background(), t0, targets)
	if err != nil || len(errs) != 1 || errs[0].Key != "bad" || errs[0].Kind != ErrorKindStall {
		t.Fatalf("errs = %v, %v; want one stall error for bad", errs, err)
	}
	if len(rd) != 2 || rd[0].Passes != 4 || rd[0].Stalled != 2*time.Millisecond || rd[0].Fraction != 0 || rd[0].Interval != 0 {
		t.Fatalf("first reading = %+v, want the totals and no fraction", rd)
	}
	if rd[1].Passes != 0 || rd[1].Stalled != 0 {
		t.Errorf("idle = %+v, want zero", rd[1])
	}
	m[10] = Stall{Count: 6, TotalNs: 502e6, MaxNs: 400e6, ReclaimedPages: 150}
	rd, _, _ = src.Collect(context.Background(), t0.Add(time.Second), targets)
	if got := rd[0]; got.Passes != 2 || got.Stalled != 500*time.Millisecond || got.ReclaimedPages != 50 ||
		got.Interval != time.Second || got.Fraction != 0.5 || got.MaxPass != 400*time.Millisecond ||
		got.TotalPasses != 6 || got.TotalStalled != 502*time.Millisecond {
		t.Errorf("second reading = %+v, want 2 passes, 500ms of 1s, 50 pages", got)
	}
	// The LRU map evicted and restarted the entry: the new totals are the reading.
	m[10] = Stall{Count: 1, TotalNs: 1e6, ReclaimedPages: 3}
	rd, _, _ = src.Collect(context.Background(), t0.Add(2*time.Second), targets)
	if got := rd[0]; got.Passes != 1 || got.Stalled != time.Millisecond || got.Interval != 0 {
		t.Errorf("after restart = %+v, want the new totals", got)
	}
}
