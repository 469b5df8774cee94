package harness

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestProbe: against a server that answers 503 for a window, the probe counts every
// request, reports each failure inside that window only, and the longest streak is the
// window's requests; in burst mode each tick sends Burst requests at once.
func TestProbe(t *testing.T) {
	var failing atomic.Bool
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		if failing.Load() {
			http.Error(w, "down on purpose", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()

	p := &Probe{URL: srv.URL, Rate: 20}
	p.Start()
	time.Sleep(500 * time.Millisecond)
	failing.Store(true)
	from := time.Now()
	time.Sleep(500 * time.Millisecond)
	failing.Store(false)
	to := time.Now()
	time.Sleep(500 * time.Millisecond)
	r := p.Stop()
	t.Logf("report: %s", r)
	if r.Sent < 20 || int64(r.Sent) != hits.Load() {
		t.Errorf("sent %d, server saw %d, want ≥ 20 and equal", r.Sent, hits.Load())
	}
	if r.Failed < 5 || r.Failed > 15 || len(r.Failures) != r.Failed {
		t.Errorf("failed %d (%d listed), want about 10 (0.5 s at 20/s)", r.Failed, len(r.Failures))
	}
	for _, f := range r.Failures {
		if f.At.Before(from.Add(-50*time.Millisecond)) || f.At.After(to) || f.Err != "status 503 Service Unavailable" {
			t.Errorf("failure %v %q outside the window [%v, %v] or not the 503", f.At, f.Err, from, to)
		}
	}
	if r.LongestStreak != r.Failed || r.StreakSpan < 300*time.Millisecond {
		t.Errorf("longest streak %d over %s, want all %d failures over ≈ 0.5 s", r.LongestStreak, r.StreakSpan, r.Failed)
	}

	// A dead address: every request fails with a transport error, none is lost.
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	p = &Probe{URL: url, Rate: 10, Burst: 3}
	p.Start()
	time.Sleep(450 * time.Millisecond)
	r = p.Stop()
	if r.Sent < 12 || r.Sent%3 != 0 || r.Failed != r.Sent || r.LongestStreak != r.Sent {
		t.Errorf("burst against a closed port: %s; want ≥ 12 sent in threes, all failed in one streak", r)
	}
}
