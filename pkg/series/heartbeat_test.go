package series

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHeartbeatRoundTrip(t *testing.T) {
	hb := Heartbeat{Node: "node-a", Version: "v1", Signals: []string{"memory", "cpu"},
		Since: t0, Through: t0.Add(30 * time.Second), At: t0.Add(31 * time.Second), TTL: 30 * time.Second}
	enc, err := hb.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHeartbeat("node-a", enc)
	if err != nil {
		t.Fatal(err)
	}
	hb.Signals = []string{"cpu", "memory"}
	if diff := cmp.Diff(hb, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := DecodeHeartbeat("node-b", enc); err == nil {
		t.Error("a record under another node's field was accepted")
	}
}

func TestHeartbeatValidate(t *testing.T) {
	ok := Heartbeat{Node: "n", Since: t0, At: t0, TTL: time.Second}
	cases := map[string]func(h *Heartbeat){
		"no node":         func(h *Heartbeat) { h.Node = "" },
		"no time":         func(h *Heartbeat) { h.At = time.Time{} },
		"no since":        func(h *Heartbeat) { h.Since = time.Time{} },
		"zero ttl":        func(h *Heartbeat) { h.TTL = 0 },
		"through < since": func(h *Heartbeat) { h.Through = t0.Add(-time.Second) },
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid heartbeat rejected: %v", err)
	}
	for name, mutate := range cases {
		h := ok
		mutate(&h)
		if h.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestOwnerOf walks a hand-over in both directions along sample times: the agent covers
// [since, through]; while its heartbeat is live, later samples wait; once it expired they go
// to the fallback; a restarted agent (new since) takes over from its first cycle on.
func TestOwnerOf(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	live := Heartbeat{Node: "n", Since: at(0), Through: at(100), At: at(101), TTL: 30 * time.Second}
	restarted := Heartbeat{Node: "n", Since: at(200), Through: at(210), At: at(211), TTL: 30 * time.Second}
	cases := map[string]struct {
		hb     Heartbeat
		known  bool
		t, now time.Time
		want   Owner
	}{
		"no agent ever":                 {known: false, t: at(5), now: at(6), want: OwnerFallback},
		"covered by a live agent":       {hb: live, known: true, t: at(100), now: at(110), want: OwnerAgent},
		"after through, agent live":     {hb: live, known: true, t: at(101), now: at(110), want: OwnerUndecided},
		"never flushed yet":             {hb: Heartbeat{Node: "n", Since: at(0), At: at(1), TTL: 30 * time.Second}, known: true, t: at(1), now: at(2), want: OwnerUndecided},
		"before the agent started":      {hb: live, known: true, t: at(-1), now: at(110), want: OwnerFallback},
		"expired: after through":        {hb: live, known: true, t: at(101), now: at(132), want: OwnerFallback},
		"expired: still agent's past":   {hb: live, known: true, t: at(99), now: at(132), want: OwnerAgent},
		"expired at the ttl's end":      {hb: live, known: true, t: at(101), now: at(131), want: OwnerUndecided},
		"restart: gap before new since": {hb: restarted, known: true, t: at(150), now: at(212), want: OwnerFallback},
		"restart: after new since":      {hb: restarted, known: true, t: at(205), now: at(212), want: OwnerAgent},
	}
	for name, c := range cases {
		if got := OwnerOf(c.hb, c.known, c.t, c.now); got != c.want {
			t.Errorf("%s: OwnerOf = %v, want %v", name, got, c.want)
		}
	}
}

func TestFallbackFieldsRoundTrip(t *testing.T) {
	h := &Histogram{}
	for i, v := range []float64{10, 20, 30} {
		if err := h.Add(v, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	h.MarkFallback(2, 60*time.Second)
	stored := map[string]string{}
	apply(t, stored, h.WireFields())
	other := &Histogram{}
	_ = other.Add(40, t0)
	other.MarkFallback(1, 15*time.Second)
	apply(t, stored, other.WireFields())
	got, err := Decode(stored)
	if err != nil {
		t.Fatal(err)
	}
	if got.N != 4 || got.FallbackN != 3 || got.FallbackResolutionSec != 60 {
		t.Errorf("merged: n=%d fallback=%d resolution=%ds, want 4, 3, 60s", got.N, got.FallbackN, got.FallbackResolutionSec)
	}
	for name, fields := range map[string]map[string]string{
		"more fallback than samples": {"fb": "5", "fr": "60"},
		"zero fallback":              {"fb": "0", "fr": "60"},
		"no resolution":              {"fb": "1"},
	} {
		bad := map[string]string{}
		for k, v := range stored {
			bad[k] = v
		}
		delete(bad, "fr")
		for k, v := range fields {
			bad[k] = v
		}
		if _, err := Decode(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzDecodeHeartbeat: arbitrary records never panic, and what is accepted re-encodes to a
// record that decodes to the same heartbeat.
func FuzzDecodeHeartbeat(f *testing.F) {
	ok, _ := Heartbeat{Node: "n1", Since: t0, At: t0, TTL: time.Minute, Signals: []string{"cpu"}}.Encode()
	f.Add("n1", ok)
	f.Add("n1", `{"node":"n1","since":"x"}`)
	f.Add("n1", `{"node":"n1","since":"2026-01-01T00:00:00Z","at":"2026-01-01T00:00:00Z","ttl":-1}`)
	f.Add("", "null")
	f.Fuzz(func(t *testing.T, node, value string) {
		h, err := DecodeHeartbeat(node, value)
		if err != nil {
			return
		}
		enc, err := h.Encode()
		if err != nil {
			t.Fatalf("accepted heartbeat does not re-encode: %v", err)
		}
		again, err := DecodeHeartbeat(node, enc)
		if err != nil || !again.At.Equal(h.At) || again.TTL != h.TTL || again.Node != h.Node {
			t.Fatalf("re-decode %q: %+v, %v (was %+v)", strconv.Quote(enc), again, err, h)
		}
	})
}
