package source

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Health is what the debug view shows of one source.
type Health struct {
	Name, Detail string
	// LastRun and LastDuration describe the last Collect; Runs counts them.
	LastRun      time.Time
	LastDuration time.Duration
	Runs         int64
	// Errors counts failed runs and failed readings of single targets.
	Errors      int64
	LastError   string
	LastErrorAt time.Time
}

// Units owns the metrics and health of every source, by name (SPEC §11.2: the node agent's
// sampling cycle duration and source errors):
//
//	ballast_node_cycle_duration_seconds{source}    histogram, one observation per Collect
//	ballast_node_source_errors_total{source,kind}  counter, one per Error and failed run
//	ballast_node_source_up{source}                 gauge, 1 when the last run succeeded
//
// Safe for concurrent use.
type Units struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	up       *prometheus.GaugeVec

	mu    sync.Mutex
	units map[string]*unit
	order []string
}

type unit struct {
	h        Health
	duration prometheus.Observer
	up       prometheus.Gauge
}

// NewUnits creates the instruments and registers them with reg.
func NewUnits(reg prometheus.Registerer) *Units {
	u := &Units{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ballast_node_cycle_duration_seconds",
			Help:    "Duration of one collection by a source (cgroup: one interval group of pods; kubelet: one Summary read and decode).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"source"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ballast_node_source_errors_total",
			Help: "Readings that failed, by source (cgroup, kubelet, oom) and kind.",
		}, []string{"source", "kind"}),
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ballast_node_source_up",
			Help: "1 when the source's last collection succeeded as a whole (single containers may still have failed), else 0.",
		}, []string{"source"}),
		units: map[string]*unit{},
	}
	reg.MustRegister(u.duration, u.errors, u.up)
	return u
}

// Add declares a source with its one-line description; the debug view lists sources in
// the order they were added. Adding a name again replaces its description.
func (u *Units) Add(name, detail string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.unitLocked(name).h.Detail = detail
}

func (u *Units) unitLocked(name string) *unit {
	x := u.units[name]
	if x == nil {
		x = &unit{h: Health{Name: name}}
		u.units[name] = x
		u.order = append(u.order, name)
	}
	return x
}

// Observe records one run of a source: when it ran, how long it took, the errors of single
// targets and the run's own failure (nil when it succeeded).
func (u *Units) Observe(name string, at time.Time, d time.Duration, errs []Error, err error) {
	u.mu.Lock()
	x := u.unitLocked(name)
	x.h.LastRun, x.h.LastDuration = at, d
	x.h.Runs++
	if x.up == nil {
		// Only sources that run have these (the event-driven OOM source has neither).
		x.duration, x.up = u.duration.WithLabelValues(name), u.up.WithLabelValues(name)
	}
	u.mu.Unlock()
	x.duration.Observe(d.Seconds())
	if err != nil {
		x.up.Set(0)
		u.Fail(name, at, KindOf(err), err)
	} else {
		x.up.Set(1)
	}
	for _, e := range errs {
		u.Fail(name, at, e.Kind, targetError{e})
	}
}

// targetError prints an Error with the target it belongs to.
type targetError struct{ e Error }

func (t targetError) Error() string {
	if t.e.Key == "" {
		return t.e.Err.Error()
	}
	return t.e.Key + ": " + t.e.Err.Error()
}

// Fail records an error of a source outside a Collect (an OOM watch that could not be
// added, an OOM event that could not be written).
func (u *Units) Fail(name string, at time.Time, kind string, err error) {
	u.errors.WithLabelValues(name, kind).Inc()
	u.mu.Lock()
	defer u.mu.Unlock()
	x := u.unitLocked(name)
	x.h.Errors++
	x.h.LastError, x.h.LastErrorAt = err.Error(), at
}

// Health returns every source's health, in the order they were added.
func (u *Units) Health() []Health {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]Health, 0, len(u.order))
	for _, n := range u.order {
		out = append(out, u.units[n].h)
	}
	return out
}

// Collect runs src.Collect and records it in u.
func Collect[T, R any](ctx context.Context, u *Units, src Source[T, R], now time.Time, targets T) (R, []Error, error) {
	start := time.Now()
	r, errs, err := src.Collect(ctx, now, targets)
	u.Observe(src.Name(), now, time.Since(start), errs, err)
	return r, errs, err
}
