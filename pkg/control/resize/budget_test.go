package resize

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestHistoryKind(t *testing.T) {
	cases := map[string]struct {
		why    string
		shrink bool
		want   string
	}{
		"interval shrink": {"interval", true, ballastv1.ResizeHistoryShrink},
		"interval growth": {"interval", false, ballastv1.ResizeHistoryRaise},
		"donor shrink":    {"donor", true, ballastv1.ResizeHistoryShrink},
		"raise-back":      {"revert", false, ballastv1.ResizeHistoryRaiseBack},
		"OOM raise":       {"oom", false, ballastv1.ResizeHistoryOOM},
		"pressure raise":  {"pressure", false, ballastv1.ResizeHistoryPressure},
		"ladder cap":      {"cap", true, ballastv1.ResizeHistoryShrink},
	}
	for name, tc := range cases {
		if got := historyKind(tc.why, tc.shrink); got != tc.want {
			t.Errorf("%s: historyKind = %q, want %q", name, got, tc.want)
		}
	}
}

// TestHistoryBookFailover: a new controller's empty book starts from the profile's status,
// and its own entries are kept with the status copy's.
func TestHistoryBookFailover(t *testing.T) {
	at := func(s int, kind string) ballastv1.ResizeHistoryEntry {
		return ballastv1.ResizeHistoryEntry{Time: metav1.NewTime(t0.Add(time.Duration(s) * time.Second)), Kind: kind, Workload: "ns/Pod/web"}
	}
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	wp.Status.ResizeHistory = []ballastv1.ResizeHistoryEntry{at(0, "shrink"), at(5, "raise-back")}
	b := newHistoryBook()
	if got := b.of(wp); len(got) != 2 || got[1].Kind != "raise-back" {
		t.Fatalf("new book over the status: %v", got)
	}
	got := b.add("web", wp.Status.ResizeHistory, at(9, "shrink"))
	if len(got) != 3 || got[2].Time.Sub(t0) != 9*time.Second {
		t.Fatalf("after add: %v", got)
	}
	// A stale status (the cache has not seen the write yet) loses nothing the book holds.
	if got := b.of(wp); len(got) != 3 {
		t.Fatalf("stale status dropped the book's entry: %v", got)
	}
}
