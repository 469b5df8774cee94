package backfill

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
)

type fakeSource struct {
	err    error
	series func(query string, start, end time.Time, step time.Duration) []Series
	calls  int
}

func (f *fakeSource) QueryRange(_ context.Context, q string, start, end time.Time, step time.Duration) ([]Series, int, error) {
	f.calls++
	if f.err != nil {
		return nil, 0, f.err
	}
	return f.series(q, start, end, step), 0, nil
}

type fakeStore struct {
	marker  string
	ups     []series.WindowUpdate
	writeEr error
}

func (s *fakeStore) ClaimBackfill(_ context.Context, _, v string, _ time.Duration) (bool, error) {
	if s.marker != "" {
		return false, nil
	}
	s.marker = v
	return true, nil
}
func (s *fakeStore) SetBackfillMarker(_ context.Context, _, v string, _ time.Duration) error {
	s.marker = v
	return nil
}
func (s *fakeStore) BackfillMarker(context.Context, string) (string, error) { return s.marker, nil }
func (s *fakeStore) WriteBackfill(_ context.Context, _ time.Duration, ups []series.WindowUpdate) error {
	if s.writeEr != nil {
		return s.writeEr
	}
	s.ups = append(s.ups, ups...)
	return nil
}

// everyStep answers one series per pod with a point every step over [start, end].
func everyStep(pods int, value float64) func(string, time.Time, time.Time, time.Duration) []Series {
	return func(_ string, start, end time.Time, step time.Duration) []Series {
		var out []Series
		for i := range pods {
			s := Series{Labels: map[string]string{"namespace": "ns", "pod": fmt.Sprint("p", i), "container": "app"}}
			for t := start; !t.After(end); t = t.Add(step) {
				s.Points = append(s.Points, Point{UnixMilli: t.UnixMilli(), Value: value})
			}
			out = append(out, s)
		}
		return out
	}
}

func TestRun(t *testing.T) {
	end := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	req := Request{Profile: "web", Hash: "0123456789abcdef", SelectorLabels: map[string]string{"app": "web"},
		Start: end.Add(-50 * time.Hour), End: end, Retention: 168 * time.Hour}
	t.Run("backfilled once, chunk edges not doubled", func(t *testing.T) {
		src := &fakeSource{series: everyStep(2, 0.25)}
		st := &fakeStore{}
		b := New(src, st, Options{})
		res := b.Run(context.Background(), req)
		if res.Reason != ResultBackfilled {
			t.Fatalf("result %+v", res)
		}
		// 50 h at one minute, both ends included, 2 pods, cpu and memory: the 3 chunks'
		// shared edges are counted once.
		want := int64(2 * 2 * (50*60 + 1))
		if res.Samples != want {
			t.Errorf("samples = %d, want %d", res.Samples, want)
		}
		if src.calls != 6 {
			t.Errorf("queries = %d, want 6 (3 chunks × cpu, memory)", src.calls)
		}
		var n int64
		for _, u := range st.ups {
			n += u.Hist.N
			if err := u.Validate(series.DefaultLayout(req.Retention)); err != nil {
				t.Fatal(err)
			}
			if u.Series.Resource == series.ResourceCPU && u.Hist.Hi != 250 {
				t.Fatalf("cpu %v millicores, want 250", u.Hist.Hi)
			}
		}
		if n != want {
			t.Errorf("written samples = %d, want %d", n, want)
		}
		if !strings.HasPrefix(res.Message, "history: backfilled 2.08 days from Prometheus") {
			t.Errorf("message %q", res.Message)
		}
		written := len(st.ups)
		again := b.Run(context.Background(), req) // a restarted leader: the marker holds
		if again.Reason != ResultAlreadyDone || again.Message != res.Message {
			t.Errorf("second run %+v", again)
		}
		if len(st.ups) != written {
			t.Errorf("second run wrote %d more windows", len(st.ups)-written)
		}
	})
	cases := map[string]struct {
		src    *fakeSource
		store  *fakeStore
		reason string
		retry  bool
	}{
		"down":        {&fakeSource{err: errors.New("dial tcp: connection refused")}, &fakeStore{}, ResultUnavailable, true},
		"garbage":     {&fakeSource{err: fmt.Errorf("querying: %w", ErrGarbage)}, &fakeStore{}, ResultBadAnswer, true},
		"api error":   {&fakeSource{err: &APIError{Type: "timeout", Message: "query timed out"}}, &fakeStore{}, ResultBadAnswer, true},
		"no history":  {&fakeSource{series: everyStep(0, 1)}, &fakeStore{}, ResultNoHistory, false},
		"store fails": {&fakeSource{series: everyStep(1, 1)}, &fakeStore{writeEr: errors.New("OOM")}, ResultStoreError, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := New(tc.src, tc.store, Options{}).Run(context.Background(), req)
			if res.Reason != tc.reason || res.Retry != tc.retry || !strings.HasPrefix(res.Message, "history: ") {
				t.Errorf("result %+v, want reason %s retry %v", res, tc.reason, tc.retry)
			}
			if len(tc.store.ups) != 0 {
				t.Errorf("wrote %d windows", len(tc.store.ups))
			}
		})
	}
}
