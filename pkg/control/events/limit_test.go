package events

import (
	"testing"
	"time"
)

func TestLimiterBurstThenRefill(t *testing.T) {
	l := NewLimiter(3, time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	allowed := 0
	for range 100 { // a rollout of 100 pods of one profile at once
		if l.Allow("shop", t0) {
			allowed++
		}
	}
	if allowed != 3 {
		t.Fatalf("allowed %d of 100 at once, want the burst of 3", allowed)
	}
	if !l.Allow("other", t0) {
		t.Error("another profile shares the bucket")
	}
	if l.Allow("shop", t0.Add(59*time.Second)) {
		t.Error("allowed before a token refilled")
	}
	if !l.Allow("shop", t0.Add(61*time.Second)) {
		t.Error("not allowed after a token refilled")
	}
	l.Forget("shop")
	if !l.Allow("shop", t0.Add(61*time.Second)) {
		t.Error("a forgotten key does not start with a full bucket")
	}
	var none *Limiter
	if !none.Allow("x", t0) {
		t.Error("a nil limiter limits")
	}
}
