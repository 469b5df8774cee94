package profiles

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Events of the StoreFull condition, recorded on every profile once per transition.
const (
	// EventStoreFull (Warning): the store refuses writes; no new history is recorded.
	EventStoreFull = "StoreFull"
	// EventStoreWritable (Normal): the store accepts writes again.
	EventStoreWritable = "StoreWritable"
)

// DefaultStoreCapacityInterval is how often the control plane reads the store's memory
// (ballast-control --store-capacity-interval): never on the admission path, one INFO and
// one no-op write per server per interval.
const DefaultStoreCapacityInterval = 30 * time.Second

// The store counts as full from fullAt of maxmemory (or as soon as a probe write is
// refused), and as writable again once below clearBelow with the probe accepted: the
// hysteresis keeps a store hovering at its limit from flapping every profile's condition.
const (
	fullAt     = 0.99
	clearBelow = 0.95
)

// CapacitySource reads how full the store is (store.ProfileReader).
type CapacitySource interface {
	Capacity(ctx context.Context, now time.Time) (store.Capacity, error)
}

// StoreWatch polls the store's memory, exports ballast_store_used_bytes,
// ballast_store_max_bytes and ballast_store_full, and decides whether the store is full,
// which the profiles controller writes as the StoreFull condition of every profile. It is
// a manager Runnable (on the leader, like the profiles controller).
type StoreWatch struct {
	src      CapacitySource
	clock    clock.PassiveClock
	interval time.Duration
	log      logr.Logger

	used, limit, full prometheus.Gauge

	mu      sync.Mutex
	state   storeState
	lastErr string
	// oom is the servers' count of commands refused for lack of memory at the last reading
	// (-1 before the first).
	oom int64
	// changed gets a value whenever the state flips, so every profile is recomputed at
	// once rather than at its next sampling interval.
	changed chan event.GenericEvent
}

type storeState struct {
	full  bool
	msg   string
	since time.Time
}

// NewStoreWatch returns a watch of src every interval (DefaultStoreCapacityInterval when
// ≤ 0) whose gauges are registered with reg.
func NewStoreWatch(src CapacitySource, clk clock.PassiveClock, interval time.Duration, reg prometheus.Registerer, log logr.Logger) *StoreWatch {
	if interval <= 0 {
		interval = DefaultStoreCapacityInterval
	}
	w := &StoreWatch{src: src, clock: clk, interval: interval, log: log.WithValues("component", "store-capacity"),
		used: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ballast_store_used_bytes",
			Help: "Memory the store uses (INFO memory used_memory of its fullest server), read every --store-capacity-interval."}),
		limit: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ballast_store_max_bytes",
			Help: "The store's maxmemory (0: no limit)."}),
		full: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ballast_store_full",
			Help: "1 while the store refuses writes for lack of memory (profiles carry the StoreFull condition), else 0."}),
		changed: make(chan event.GenericEvent, 1),
		oom:     -1,
	}
	reg.MustRegister(w.used, w.limit, w.full)
	return w
}

// NeedLeaderElection: only the leader computes profiles.
func (w *StoreWatch) NeedLeaderElection() bool { return true }

// Start polls until ctx ends.
func (w *StoreWatch) Start(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		w.Poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll reads the store once and updates the gauges and the state. An unreadable store
// keeps the last state (the read errors of the profiles say it is unreachable).
func (w *StoreWatch) Poll(ctx context.Context) {
	now := w.clock.Now()
	pctx, cancel := context.WithTimeout(ctx, min(w.interval, 5*time.Second))
	cp, err := w.src.Capacity(pctx, now)
	cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != w.lastErr {
			w.lastErr = msg
			w.log.Error(err, "reading the store's memory; StoreFull keeps its last value (the control plane's store user needs INFO)")
		}
		if !cp.Refused {
			return
		}
	} else {
		w.lastErr = ""
		w.used.Set(float64(cp.UsedBytes))
		w.limit.Set(float64(cp.MaxBytes))
	}
	// Commands refused since the last reading (a count that went down was reset).
	refusedSince := int64(0)
	if err == nil {
		if w.oom >= 0 && cp.OOMErrors > w.oom {
			refusedSince = cp.OOMErrors - w.oom
		}
		w.oom = cp.OOMErrors
	}
	full := decideFull(w.state.full, cp, refusedSince)
	if full == w.state.full {
		return
	}
	w.state = storeState{full: full, since: now}
	if full {
		w.state.msg = fullMessage(cp)
		w.full.Set(1)
		w.log.Error(nil, "the store is full: writes are refused and no new history is recorded; every profile is marked StoreFull",
			"usedBytes", cp.UsedBytes, "maxBytes", cp.MaxBytes, "policy", cp.Policy, "server", cp.Addr, "probeRefused", cp.Refused,
			"refusedSinceLastReading", refusedSince)
	} else {
		w.full.Set(0)
		w.log.Info("the store accepts writes again: StoreFull cleared", "usedBytes", cp.UsedBytes, "maxBytes", cp.MaxBytes)
	}
	select {
	case w.changed <- event.GenericEvent{Object: &ballastv1.WorkloadProfile{}}:
	default:
	}
}

// decideFull is the hysteresis: full when a probe write was refused, the servers refused
// commands for lack of memory since the last reading (refusedSince: agent flushes, whose
// size counts against maxmemory, are refused before a tiny probe is), or the counted
// memory reached fullAt of maxmemory; a full store is writable again when none of the
// first two holds and the memory is below clearBelow.
func decideFull(wasFull bool, cp store.Capacity, refusedSince int64) bool {
	if cp.Refused || refusedSince > 0 {
		return true
	}
	if cp.MaxBytes <= 0 {
		return false
	}
	if wasFull {
		return cp.Ratio() >= clearBelow
	}
	return cp.Ratio() >= fullAt
}

func fullMessage(cp store.Capacity) string {
	what := "writes are refused"
	if cp.Policy != "" && cp.Policy != "noeviction" {
		what = fmt.Sprintf("maxmemory-policy %s evicts history (Ballast needs noeviction)", cp.Policy)
	}
	return fmt.Sprintf("The store is full: %s used of maxmemory %s on %s; %s, node agents keep their windows buffered "+
		"(bounded) and retry, and no new history is recorded. Raise maxmemory (docs/store.md sizing) or shorten the retention window",
		mib(cp.UsedBytes), mib(cp.MaxBytes), cp.Addr, what)
}

func mib(b int64) string { return fmt.Sprintf("%.2fMi", float64(b)/(1<<20)) }

// Full reports whether the store is full, with the condition's message and since when.
func (w *StoreWatch) Full() (bool, string, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state.full, w.state.msg, w.state.since
}

// SetStoreWatch makes the controller write the StoreFull condition from w (before
// Register; nil: no condition).
func (c *Controller) SetStoreWatch(w *StoreWatch) { c.storeWatch = w }

// applyStoreFull sets or removes the StoreFull condition of next. The message is fixed at
// the transition, so a store staying full costs no status write.
func (c *Controller) applyStoreFull(next *ballastv1.WorkloadProfileStatus, gen int64) {
	if c.storeWatch == nil {
		return
	}
	full, msg, since := c.storeWatch.Full()
	if !full {
		meta.RemoveStatusCondition(&next.Conditions, ballastv1.ConditionStoreFull)
		return
	}
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: ballastv1.ConditionStoreFull, Status: metav1.ConditionTrue,
		Reason: ballastv1.ReasonMaxMemoryReached, Message: msg, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(since)})
}

// storeFullEvents are the StoreFull transitions between the stored status and next.
func storeFullEvents(wp *ballastv1.WorkloadProfile, next *ballastv1.WorkloadProfileStatus) []events.Event {
	was, is := isTrue(wp.Status.Conditions, ballastv1.ConditionStoreFull), isTrue(next.Conditions, ballastv1.ConditionStoreFull)
	switch {
	case is && !was:
		msg := meta.FindStatusCondition(next.Conditions, ballastv1.ConditionStoreFull).Message
		return []events.Event{{Object: wp, Type: corev1.EventTypeWarning, Reason: EventStoreFull, Message: msg}}
	case was && !is:
		return []events.Event{{Object: wp, Type: corev1.EventTypeNormal, Reason: EventStoreWritable,
			Message: "the store accepts writes again; node agents flush their buffered windows"}}
	}
	return nil
}
