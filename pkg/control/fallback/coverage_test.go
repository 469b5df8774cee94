package fallback

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/ballastk8s/ballast/pkg/series"
)

// TestCoverageLoggedOncePerChange: a node's agent coverage is logged when it changes (the
// heartbeat expires, comes back, a node without an agent appears), never every cycle, and
// many changes in one cycle are one line.
func TestCoverageLoggedOncePerChange(t *testing.T) {
	var lines []string
	c := &Controller{log: funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})}
	hb := series.Heartbeat{Node: "a", Since: at(0), At: at(10), Through: at(9), TTL: 6 * time.Second}
	hbs := map[string]series.Heartbeat{"a": hb}
	cycle := func(now int, covered map[string]bool) []string {
		lines = nil
		c.logCoverage(covered, hbs, at(now))
		return lines
	}
	steps := []struct {
		name    string
		covered map[string]bool
		want    []string // substrings, one per line
	}{
		{"first cycle: one line for the uncovered nodes", map[string]bool{"a": true, "b": false}, []string{`"withoutLiveAgent"=1`}},
		{"nothing changed", map[string]bool{"a": true, "b": false}, nil},
		{"a's heartbeat expired", map[string]bool{"a": false, "b": false}, []string{`"node"="a"`}},
		{"still expired", map[string]bool{"a": false, "b": false}, nil},
		{"a back, c new without an agent", map[string]bool{"a": true, "b": false, "c": false}, []string{`"node"="c"`, `live again`}},
	}
	for i, st := range steps {
		got := cycle(10+7*i, st.covered)
		if len(got) != len(st.want) {
			t.Fatalf("%s: %d lines %q, want %d", st.name, len(got), got, len(st.want))
		}
		for j, w := range st.want {
			if !strings.Contains(got[j], w) {
				t.Errorf("%s: line %q lacks %q", st.name, got[j], w)
			}
		}
	}
	if got := cycle(60, map[string]bool{"a": true, "b": false, "c": false}); len(got) != 0 {
		t.Errorf("no change logged %q", got)
	}
	many := map[string]bool{}
	for i := range 2 * maxCoverageLines {
		many[fmt.Sprintf("n%02d", i)] = false
	}
	got := cycle(70, many)
	if len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf(`"withoutLiveAgent"=%d`, 2*maxCoverageLines)) || !strings.Contains(got[0], "and 10 more") {
		t.Errorf("%d nodes losing coverage at once: %q, want one line", len(many), got)
	}
}
