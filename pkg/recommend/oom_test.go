package recommend

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOOMBumpBytes(t *testing.T) {
	cases := map[string]struct {
		e    OOMEvent
		want int64
	}{
		"small peak: +100Mi wins":            {e: OOMEvent{PeakBytes: 256 * mib}, want: 356 * mib},
		"500Mi is where both rules agree":    {e: OOMEvent{PeakBytes: 500 * mib}, want: 600 * mib},
		"large peak: x1.2 wins, truncated":   {e: OOMEvent{PeakBytes: gib}, want: 1288490188},
		"peak preferred over limit":          {e: OOMEvent{PeakBytes: 256 * mib, LimitBytes: gib}, want: 356 * mib},
		"unknown peak falls back to limit":   {e: OOMEvent{LimitBytes: 512 * mib}, want: 644245094},
		"nothing known":                      {e: OOMEvent{}, want: 0},
		"negative values are unknown":        {e: OOMEvent{PeakBytes: -1, LimitBytes: -1}, want: 0},
		"one byte":                           {e: OOMEvent{PeakBytes: 1}, want: 100*mib + 1},
		"saturates instead of overflowing":   {e: OOMEvent{PeakBytes: math.MaxInt64}, want: math.MaxInt64},
		"x1.2 exact at the top of the range": {e: OOMEvent{PeakBytes: math.MaxInt64 / 6 * 5}, want: math.MaxInt64 / 6 * 6},
		"x1.2 saturates past the range":      {e: OOMEvent{PeakBytes: math.MaxInt64/6*5 + 5}, want: math.MaxInt64},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := OOMBumpBytes(tc.e); got != tc.want {
				t.Errorf("OOMBumpBytes(%+v) = %d, want %d", tc.e, got, tc.want)
			}
		})
	}
}

func TestApplyOOMBump(t *testing.T) {
	now := t0.Add(200 * time.Hour)
	const retention = 168 * time.Hour
	preset := Amounts{Request: 192 * mib, Limit: 288 * mib, HasRequest: true, HasLimit: true}
	// A kill at a 300Mi peak calls for max(360Mi, 400Mi) = 400Mi.
	kill := func(age time.Duration) OOMEvent {
		return OOMEvent{Container: "app", Time: now.Add(-age), PeakBytes: 300 * mib, LimitBytes: 288 * mib}
	}
	cases := map[string]struct {
		history    Amounts
		events     []OOMEvent
		want       Amounts
		wantBump   int64
		wantActive bool
	}{
		"no events": {history: preset, want: preset},
		"request and limit raised at once": {history: preset, events: []OOMEvent{kill(time.Minute)},
			want:     Amounts{Request: 400 * mib, Limit: 400 * mib, HasRequest: true, HasLimit: true},
			wantBump: 400 * mib, wantActive: true},
		"history limit covers the bump": {
			history: Amounts{Request: 192 * mib, Limit: 512 * mib, HasRequest: true, HasLimit: true},
			events:  []OOMEvent{kill(time.Minute)},
			want:    Amounts{Request: 192 * mib, Limit: 512 * mib, HasRequest: true, HasLimit: true}, wantBump: 400 * mib},
		"history limit exactly at the bump covers it": {
			history: Amounts{Request: 192 * mib, Limit: 400 * mib, HasRequest: true, HasLimit: true},
			events:  []OOMEvent{kill(time.Minute)},
			want:    Amounts{Request: 192 * mib, Limit: 400 * mib, HasRequest: true, HasLimit: true}, wantBump: 400 * mib},
		"history limit one byte short does not": {
			history:  Amounts{Request: 192 * mib, Limit: 400*mib - 1, HasRequest: true, HasLimit: true},
			events:   []OOMEvent{kill(time.Minute)},
			want:     Amounts{Request: 400 * mib, Limit: 400 * mib, HasRequest: true, HasLimit: true},
			wantBump: 400 * mib, wantActive: true},
		"request-only policy gets no limit": {
			history: Amounts{Request: 192 * mib, HasRequest: true}, events: []OOMEvent{kill(time.Minute)},
			want: Amounts{Request: 400 * mib, HasRequest: true}, wantBump: 400 * mib, wantActive: true},
		"request-only policy covered by its request": {
			history: Amounts{Request: 450 * mib, HasRequest: true}, events: []OOMEvent{kill(time.Minute)},
			want: Amounts{Request: 450 * mib, HasRequest: true}, wantBump: 400 * mib},
		"a request above the bump is kept": {
			history:  Amounts{Request: 450 * mib, Limit: 300 * mib, HasRequest: true, HasLimit: true},
			events:   []OOMEvent{kill(time.Minute)},
			want:     Amounts{Request: 450 * mib, Limit: 400 * mib, HasRequest: true, HasLimit: true},
			wantBump: 400 * mib, wantActive: true},
		"kill exactly one retention window old still counts": {history: preset, events: []OOMEvent{kill(retention)},
			want:     Amounts{Request: 400 * mib, Limit: 400 * mib, HasRequest: true, HasLimit: true},
			wantBump: 400 * mib, wantActive: true},
		"kill older than the retention window has expired": {history: preset,
			events: []OOMEvent{kill(retention + time.Nanosecond)}, want: preset},
		"kill stamped in the future counts": {history: preset, events: []OOMEvent{kill(-time.Minute)},
			want:     Amounts{Request: 400 * mib, Limit: 400 * mib, HasRequest: true, HasLimit: true},
			wantBump: 400 * mib, wantActive: true},
		"largest live kill decides": {history: preset,
			events: []OOMEvent{kill(time.Hour), {Time: now.Add(-time.Minute), PeakBytes: gib},
				{Time: now.Add(-retention - time.Hour), PeakBytes: 4 * gib}},
			want:     Amounts{Request: 1288490188, Limit: 1288490188, HasRequest: true, HasLimit: true},
			wantBump: 1288490188, wantActive: true},
		"no recommendation to raise": {history: Amounts{}, events: []OOMEvent{kill(time.Minute)},
			want: Amounts{}, wantBump: 400 * mib},
		"kill with nothing known": {history: preset, events: []OOMEvent{{Time: now}}, want: preset},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, bump, active := ApplyOOMBump(tc.history, tc.events, now, retention)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("amounts (-want +got):\n%s", diff)
			}
			if bump != tc.wantBump || active != tc.wantActive {
				t.Errorf("bump, active = %d, %v; want %d, %v", bump, active, tc.wantBump, tc.wantActive)
			}
		})
	}
}
