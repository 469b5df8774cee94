package profiles

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	clocktesting "k8s.io/utils/clock/testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/store"
)

// capacityReadings answers Capacity with the next reading (the last one repeats).
type capacityReadings struct {
	caps []store.Capacity
	errs []error
}

func (r *capacityReadings) Capacity(context.Context, time.Time) (store.Capacity, error) {
	cp, err := r.caps[0], r.errs[0]
	if len(r.caps) > 1 {
		r.caps, r.errs = r.caps[1:], r.errs[1:]
	}
	return cp, err
}

func TestDecideFull(t *testing.T) {
	const mb = 1 << 20
	at := func(used int64) store.Capacity {
		return store.Capacity{UsedBytes: used, CountedBytes: used, MaxBytes: 100 * mb}
	}
	if !decideFull(false, at(60*mb), 3) || !decideFull(true, at(10*mb), 1) {
		t.Error("commands refused since the last reading do not make the store full")
	}
	for _, c := range []struct {
		name    string
		wasFull bool
		cp      store.Capacity
		want    bool
	}{
		{"half", false, at(50 * mb), false},
		{"just under the mark", false, at(98 * mb), false},
		{"at the mark", false, at(99 * mb), true},
		{"probe refused below the mark", false, store.Capacity{CountedBytes: 10, MaxBytes: 100 * mb, Refused: true}, true},
		{"no limit", false, store.Capacity{UsedBytes: 1 << 40, CountedBytes: 1 << 40}, false},
		{"full, still above the clear mark", true, at(96 * mb), true},
		{"full, below the clear mark", true, at(94 * mb), false},
	} {
		if got := decideFull(c.wasFull, c.cp, 0); got != c.want {
			t.Errorf("%s: full %t, want %t", c.name, got, c.want)
		}
	}
}

// The watch flips on a full reading, keeps its state when the store cannot be read, signals
// each flip, and the controller turns it into the StoreFull condition and one event per
// transition with a message fixed at the transition.
func TestStoreWatch(t *testing.T) {
	const mb = 1 << 20
	full := store.Capacity{Addr: "valkey:6379", UsedBytes: 3 * mb, CountedBytes: 3 * mb, MaxBytes: 3 * mb, Policy: "noeviction", Refused: true}
	fuller := full
	fuller.UsedBytes++
	src := &capacityReadings{
		caps: []store.Capacity{{UsedBytes: mb, CountedBytes: mb, MaxBytes: 3 * mb}, full, {}, fuller, {UsedBytes: mb, CountedBytes: mb, MaxBytes: 6 * mb}},
		errs: []error{nil, nil, errors.New("dial tcp: connection refused"), nil, nil},
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	w := NewStoreWatch(src, clk, time.Second, reg, logr.Discard())
	c := &Controller{storeWatch: w}
	ctx := context.Background()
	wp := &ballastv1.WorkloadProfile{}
	wp.Name = "p"
	step := func() (ballastv1.WorkloadProfileStatus, int) {
		next := wp.Status.DeepCopy()
		c.applyStoreFull(next, 1)
		evs := storeFullEvents(wp, next)
		for _, e := range evs {
			if e.Reason == EventStoreFull && e.Type != corev1.EventTypeWarning {
				t.Errorf("StoreFull event of type %s", e.Type)
			}
		}
		wp.Status = *next
		return *next, len(evs)
	}
	signalled := func() bool {
		select {
		case <-w.changed:
			return true
		default:
			return false
		}
	}

	w.Poll(ctx)
	if st, n := step(); meta.FindStatusCondition(st.Conditions, ballastv1.ConditionStoreFull) != nil || n != 0 || signalled() {
		t.Fatalf("a third full store is StoreFull: %+v, %d events", st.Conditions, n)
	}
	if got := testutil.ToFloat64(w.used); got != mb {
		t.Errorf("ballast_store_used_bytes %v", got)
	}
	clk.Step(time.Second)
	w.Poll(ctx)
	st, n := step()
	cond := meta.FindStatusCondition(st.Conditions, ballastv1.ConditionStoreFull)
	if cond == nil || cond.Status != "True" || cond.Reason != ballastv1.ReasonMaxMemoryReached || n != 1 || !signalled() {
		t.Fatalf("full store: condition %+v, %d events", cond, n)
	}
	if testutil.ToFloat64(w.full) != 1 || testutil.ToFloat64(w.limit) != 3*mb {
		t.Errorf("gauges: full %v max %v", testutil.ToFloat64(w.full), testutil.ToFloat64(w.limit))
	}
	msg := cond.Message
	for range 2 { // unreadable, then fuller: still full, same message, no event, no signal
		clk.Step(time.Second)
		w.Poll(ctx)
		st, n = step()
		cond = meta.FindStatusCondition(st.Conditions, ballastv1.ConditionStoreFull)
		if cond == nil || cond.Message != msg || n != 0 || signalled() {
			t.Fatalf("staying full: condition %+v, %d events", cond, n)
		}
	}
	clk.Step(time.Second)
	w.Poll(ctx)
	st, n = step()
	if meta.FindStatusCondition(st.Conditions, ballastv1.ConditionStoreFull) != nil || n != 1 || !signalled() || testutil.ToFloat64(w.full) != 0 {
		t.Fatalf("maxmemory raised: conditions %+v, %d events", st.Conditions, n)
	}
}
