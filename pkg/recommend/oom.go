package recommend

import (
	"math"
	"time"
)

// OOMBumpMinBytes is the smallest raise above the peak an OOM kill causes.
const OOMBumpMinBytes int64 = 100 << 20

// OOMEvent is one OOM kill of a container of the profile.
type OOMEvent struct {
	Container string
	Time      time.Time
	// PeakBytes is the container's memory peak at the kill; LimitBytes its memory limit
	// then (0 when unknown or unlimited).
	PeakBytes  int64
	LimitBytes int64
}

// OOMBumpBytes is the memory an OOM kill calls for: max(peak × 1.2, peak + 100Mi), with
// peak × 1.2 truncated to whole bytes. The peak is PeakBytes, or LimitBytes when the peak
// is unknown; 0 when both are unknown. The result saturates at the int64 range.
func OOMBumpBytes(e OOMEvent) int64 {
	peak := e.PeakBytes
	if peak <= 0 {
		peak = e.LimitBytes
	}
	if peak <= 0 {
		return 0
	}
	scaled := int64(math.MaxInt64)
	// peak × 6/5 = (peak/5)×6 + (peak%5)×6/5, checked against overflow exactly.
	if q, extra := peak/5, (peak%5)*6/5; q <= (math.MaxInt64-extra)/6 {
		scaled = q*6 + extra
	}
	plus := int64(math.MaxInt64)
	if peak <= math.MaxInt64-OOMBumpMinBytes {
		plus = peak + OOMBumpMinBytes
	}
	return max(scaled, plus)
}

// ApplyOOMBump raises a memory recommendation after OOM kills (ARCHITECTURE "Control-plane
// flows"). events are the kills of one container; history is the recommendation computed
// from its series.
//
// An event counts while it is no older than retention (its samples are then still part of
// the history). The bump is the largest OOMBumpBytes among counting events. It is covered
// once the history's own top recommendation (the limit when the policy sets one, else the
// request) reaches it; until then, every field the history sets is raised to at least the
// bump, request and limit at once. Fields the policy does not set are never added.
//
// It returns the resulting recommendation, the bump, and whether the bump changed anything.
func ApplyOOMBump(history Amounts, events []OOMEvent, now time.Time, retention time.Duration) (Amounts, int64, bool) {
	var bump int64
	for _, e := range events {
		if now.Sub(e.Time) > retention {
			continue
		}
		bump = max(bump, OOMBumpBytes(e))
	}
	var top int64
	switch {
	case bump == 0:
		return history, 0, false
	case history.HasLimit:
		top = history.Limit
	case history.HasRequest:
		top = history.Request
	default:
		return history, bump, false
	}
	if top >= bump {
		return history, bump, false
	}
	out := history
	if out.HasRequest {
		out.Request = max(out.Request, bump)
	}
	if out.HasLimit {
		out.Limit = max(out.Limit, bump)
	}
	return out, bump, true
}
