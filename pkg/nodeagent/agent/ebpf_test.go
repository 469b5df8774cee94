package agent

import (
	"testing"
	"time"
)

func TestOOMLedgerCountsOneKillOnce(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := 10 * time.Second
	var l oomLedger
	// eBPF first (milliseconds), then inotify's oom_kill increase of the same kill.
	if n := l.fresh(true, 1, t0, w); n != 1 {
		t.Fatalf("eBPF kill: fresh %d, want 1", n)
	}
	if n := l.fresh(false, 1, t0.Add(5*time.Millisecond), w); n != 0 {
		t.Fatalf("the files' count of the same kill: fresh %d, want 0", n)
	}
	// Files first (a poll), eBPF later: still one.
	if n := l.fresh(false, 2, t0.Add(time.Minute), w); n != 2 {
		t.Fatalf("two polled kills: fresh %d, want 2", n)
	}
	if n := l.fresh(true, 1, t0.Add(time.Minute-3*time.Second), w); n != 0 {
		t.Fatalf("eBPF report of a polled kill: fresh %d, want 0", n)
	}
	if n := l.fresh(true, 1, t0.Add(time.Minute+time.Second), w); n != 0 {
		t.Fatalf("eBPF report of the second polled kill: fresh %d, want 0", n)
	}
	// Outside the window the other path's report is another kill.
	if n := l.fresh(true, 1, t0.Add(2*time.Minute), w); n != 1 {
		t.Fatalf("a later eBPF kill: fresh %d, want 1", n)
	}
	if n := l.fresh(false, 1, t0.Add(3*time.Minute), w); n != 1 {
		t.Fatalf("a files kill a minute after the eBPF one: fresh %d, want 1", n)
	}
}
