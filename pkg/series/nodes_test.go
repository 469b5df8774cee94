package series

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNodeFieldsRoundTrip: a window's node tallies decode back, Decode ignores them, and
// a window without any (written before attribution) decodes with none.
func TestNodeFieldsRoundTrip(t *testing.T) {
	h := &Histogram{}
	for i, v := range []float64{100.4, 200.4, 300.4} {
		_ = h.Add(v, time.Unix(int64(1000+i), 0))
	}
	fields := map[string]string{}
	wire := append(h.WireFields(), NodeFields("node-a.example", h)...)
	for i := 0; i < len(wire); i += 2 {
		fields[wire[i]] = wire[i+1]
	}
	if _, err := Decode(fields); err != nil {
		t.Fatalf("Decode with node tallies: %v", err)
	}
	got, err := DecodeNodes(fields)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]NodeTally{{Node: "node-a.example", N: 3, Sum: 601}}, got); diff != "" {
		t.Errorf("tallies (-want +got):\n%s", diff)
	}
	delete(fields, "n:node-a.example:c")
	delete(fields, "n:node-a.example:s")
	if got, err := DecodeNodes(fields); err != nil || got != nil {
		t.Errorf("a window without tallies = %v, %v", got, err)
	}
}

func TestDecodeNodesRejectsMalformed(t *testing.T) {
	cases := map[string]map[string]string{
		"count without sum": {"n:a:c": "3"},
		"negative":          {"n:a:c": "-1", "n:a:s": "3"},
		"not a number":      {"n:a:c": "x", "n:a:s": "3"},
		"bad node name":     {"n:A_B:c": "1", "n:A_B:s": "3"},
		"unknown suffix":    {"n:a:x": "1"},
		"no name":           {"n::c": "1"},
	}
	for name, f := range cases {
		if _, err := DecodeNodes(f); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestWindowUpdateRejectsABadNodeName(t *testing.T) {
	l := DefaultLayout(0)
	h := &Histogram{}
	at := time.Unix(1800, 0)
	_ = h.Add(1, at)
	u := WindowUpdate{Series: SeriesID{Profile: "ab", Container: "app", Resource: ResourceCPU, Signal: SignalUsage},
		Start: WindowStart(at, l.Window), Hist: h, Node: "Bad:Name"}
	if err := (WindowUpdate{Series: u.Series, Start: u.Start, Hist: h, Node: "node-1"}).Validate(l); err != nil {
		t.Fatalf("a good node name: %v", err)
	}
	if err := u.Validate(l); err == nil {
		t.Error("a node name with ':' was accepted")
	}
}
