package understudy

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Relax reasons of ballast_understudy_hold_relaxed_total (SPEC §15.4 step 5).
const (
	RelaxDeadline         = "deadline"
	RelaxDeadlineTooClose = "deadline_too_close"
	RelaxKillSwitch       = "kill_switch"
)

// Metrics are Understudy's instruments (SPEC §15.6, dots as underscores, counters _total).
type Metrics struct {
	// EvictionsHeld is ballast_understudy_evictions_held_total{namespace, name}.
	EvictionsHeld *prometheus.CounterVec
	// Attempts is ballast_understudy_eviction_attempts_observed_total{namespace, name}:
	// every eviction request for a protected pod, held or not.
	Attempts *prometheus.CounterVec
	// Surges is ballast_understudy_surges_total{namespace, name}.
	Surges *prometheus.CounterVec
	// Relaxed is ballast_understudy_hold_relaxed_total{namespace, name, reason}.
	Relaxed *prometheus.CounterVec
	// Blocked feeds ballast_understudy_oldest_blocked_eviction_seconds{namespace, name}.
	Blocked *BlockedGauge
}

// NewMetrics creates the instruments and registers them with reg.
func NewMetrics(reg prometheus.Registerer, clk clock.PassiveClock) *Metrics {
	l := []string{"namespace", "name"}
	m := &Metrics{
		EvictionsHeld: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_understudy_evictions_held_total",
			Help: "Evictions of protected pods answered with 429."}, l),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_understudy_eviction_attempts_observed_total",
			Help: "Eviction requests observed for protected pods, held or allowed."}, l),
		Surges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_understudy_surges_total",
			Help: "Surges started."}, l),
		Relaxed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_understudy_hold_relaxed_total",
			Help: "Holds released without a Ready stand-in, by reason."}, []string{"namespace", "name", "reason"}),
		Blocked: &BlockedGauge{clock: clk, since: map[types.NamespacedName]time.Time{},
			desc: prometheus.NewDesc("ballast_understudy_oldest_blocked_eviction_seconds",
				"Age of the oldest eviction held by the Understudy; 0 when none is held.", l, nil)},
	}
	reg.MustRegister(m.EvictionsHeld, m.Attempts, m.Surges, m.Relaxed, m.Blocked)
	return m
}

// BlockedGauge reports, at scrape time, how long each Understudy has held an eviction.
type BlockedGauge struct {
	clock clock.PassiveClock
	desc  *prometheus.Desc
	mu    sync.Mutex
	since map[types.NamespacedName]time.Time
}

// Set records the oldest held eviction of key; a zero time reports 0 (nothing held).
func (g *BlockedGauge) Set(key types.NamespacedName, t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.since[key] = t
}

// Forget drops a deleted Understudy's series.
func (g *BlockedGauge) Forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.since, key)
}

// Describe implements prometheus.Collector.
func (g *BlockedGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *BlockedGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	for k, t := range g.since {
		v := 0.0
		if !t.IsZero() {
			v = now.Sub(t).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, k.Namespace, k.Name)
	}
}
