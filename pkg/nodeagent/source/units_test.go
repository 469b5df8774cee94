package source

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fake is a Source that returns what it is told to.
type fake struct {
	errs []Error
	err  error
}

func (f *fake) Name() string { return "fake" }

func (f *fake) Collect(_ context.Context, _ time.Time, targets []string) ([]string, []Error, error) {
	return targets, f.errs, f.err
}

// Collect records every run once: its duration, one error per failed target by kind, the
// run's failure and whether it succeeded, in the metrics and in the health.
func TestCollectRecordsMetricsAndHealth(t *testing.T) {
	reg := prometheus.NewRegistry()
	u := NewUnits(reg)
	u.Add("fake", "a test source")
	src := &fake{errs: []Error{{Key: ContainerKey("uid1", "app"), Kind: "read", Err: errors.New("reading cpu.stat: EIO")},
		{Key: ContainerKey("uid2", "app"), Kind: "read", Err: errors.New("gone")}}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	got, errs, err := Collect(context.Background(), u, src, t0, []string{"a", "b"})
	if err != nil || len(got) != 2 || len(errs) != 2 {
		t.Fatalf("Collect = %v, %v, %v", got, errs, err)
	}
	if n := testutil.ToFloat64(u.errors.WithLabelValues("fake", "read")); n != 2 {
		t.Errorf("read errors %v, want 2", n)
	}
	if v := testutil.ToFloat64(u.up.WithLabelValues("fake")); v != 1 {
		t.Errorf("up %v after a run with target errors only, want 1", v)
	}

	src.errs, src.err = nil, Fail("unauthorized", errors.New("kubelet said 401"))
	t1 := t0.Add(time.Second)
	if _, _, err := Collect(context.Background(), u, src, t1, nil); err == nil {
		t.Fatal("the run's failure was not returned")
	}
	if n := testutil.ToFloat64(u.errors.WithLabelValues("fake", "unauthorized")); n != 1 {
		t.Errorf("unauthorized errors %v, want 1", n)
	}
	if v := testutil.ToFloat64(u.up.WithLabelValues("fake")); v != 0 {
		t.Errorf("up %v after a failed run, want 0", v)
	}
	if n := testutil.CollectAndCount(u.duration); n != 1 {
		t.Errorf("%d duration series, want 1", n)
	}

	u.Fail("oom", t1, "write", errors.New("store down"))
	if n, m := testutil.CollectAndCount(u.up), testutil.CollectAndCount(u.duration); n != 1 || m != 1 {
		t.Errorf("%d up gauges, %d duration histograms; want 1 each (a source that never ran has none)", n, m)
	}
	h := u.Health()
	if len(h) != 2 || h[0].Name != "fake" || h[1].Name != "oom" {
		t.Fatalf("health %+v", h)
	}
	f := h[0]
	if f.Detail != "a test source" || f.Runs != 2 || f.Errors != 3 || !f.LastRun.Equal(t1) || f.LastError != "kubelet said 401" {
		t.Errorf("fake health %+v", f)
	}
	if h[1].Runs != 0 || h[1].Errors != 1 || h[1].LastError != "store down" {
		t.Errorf("oom health %+v", h[1])
	}
}

// A target's error names the target in the health; a run error without a kind is "run".
func TestErrorsNameTheirTarget(t *testing.T) {
	u := NewUnits(prometheus.NewRegistry())
	u.Observe("s", time.Time{}, 0, []Error{{Key: ContainerKey("u", "c"), Kind: "k", Err: errors.New("boom")}}, nil)
	if got := u.Health()[0].LastError; got != "u/c: boom" {
		t.Errorf("last error %q", got)
	}
	if k := KindOf(errors.New("plain")); k != "run" {
		t.Errorf("KindOf(plain) = %q", k)
	}
	wrapped := Fail("forbidden", errors.New("403"))
	if k := KindOf(errors.Join(errors.New("x"), wrapped)); k != "forbidden" {
		t.Errorf("KindOf(joined) = %q", k)
	}
	if !strings.Contains(wrapped.Error(), "403") {
		t.Errorf("Fail(...).Error() = %q", wrapped.Error())
	}
}
