// Package config tracks the cluster-wide settings every replica needs: BallastConfig
// "ballast" and the kill switch (SPEC §10). It runs on every replica, not only the leader,
// so every webhook server observes activation and release within seconds.
package config

import (
	"slices"
	"sync"

	"github.com/go-logr/logr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/logging"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// Kill-switch reasons (SPEC §10.1).
const (
	ReasonConfigMap = "ConfigMap " + ballastv1.KillSwitchConfigMap
	ReasonSuspended = "BallastConfig.spec.suspended"
	ReasonBoth      = ReasonConfigMap + " and " + ReasonSuspended
)

// Snapshot is an immutable view of the settings at one moment.
type Snapshot struct {
	// Config is nil while BallastConfig "ballast" does not exist.
	Config *ballastv1.BallastConfigSpec
	// KillSwitch is the active reason, "" when inactive.
	KillSwitch string
	// floors are Config's spec.policyFloors, parsed once per change.
	floors policy.Floors
}

// PolicyFloors are the floors of every ResourcePolicy (BallastConfig spec.policyFloors);
// the default floors while no BallastConfig exists.
func (s Snapshot) PolicyFloors() policy.Floors {
	if s.Config == nil {
		return policy.DefaultFloors
	}
	return s.floors
}

// Active reports whether the kill switch is active.
func (s Snapshot) Active() bool { return s.KillSwitch != "" }

// IdentityLabels returns the identity keys, nil without a BallastConfig.
func (s Snapshot) IdentityLabels() []string {
	if s.Config == nil {
		return nil
	}
	return s.Config.IdentityLabels
}

// State is the shared, concurrency-safe holder of the current Snapshot.
type State struct {
	mu        sync.RWMutex
	snap      Snapshot
	listeners []func(old, new Snapshot)
	metrics   *Metrics
}

// NewState returns an empty state: no BallastConfig, kill switch inactive. m counts
// suppressed actions and transitions; nil counts nothing (tests).
func NewState(m *Metrics) *State { return &State{metrics: m} }

// Suppress records one action the kill switch suppressed (SPEC §10.2): a warn line with
// kill_switch, kill_switch_reason and action, plus kv, and one count of
// ballast_kill_switch_suppressed_total{action}. Call it only while snap.Active().
func (s *State) Suppress(log logr.Logger, snap Snapshot, action, msg string, kv ...any) {
	if s.metrics != nil {
		s.metrics.Suppressed.WithLabelValues(action).Inc()
	}
	kv = append([]any{"kill_switch", true, "kill_switch_reason", snap.KillSwitch, "action", action}, kv...)
	logging.Warn(log, msg, kv...)
}

// Get returns the current snapshot.
func (s *State) Get() Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.snap
}

// OnChange registers f to be called after every change, with the old and new snapshots.
// Register before the manager starts.
func (s *State) OnChange(f func(old, new Snapshot)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, f)
}

// update recomputes the snapshot from the observed objects; it reports the old and new
// snapshots and whether anything changed.
func (s *State) update(cfg *ballastv1.BallastConfigSpec, configMap bool) (Snapshot, Snapshot, bool) {
	s.mu.Lock()
	old := s.snap
	next := Snapshot{Config: cfg, KillSwitch: reason(configMap, cfg != nil && cfg.Suspended)}
	next.floors, _ = policy.FloorsOf(cfg)
	s.snap = next
	listeners := slices.Clone(s.listeners)
	s.mu.Unlock()
	changed := old.KillSwitch != next.KillSwitch || !sameConfig(old.Config, next.Config)
	if changed {
		for _, f := range listeners {
			f(old, next)
		}
	}
	return old, next, changed
}

func reason(configMap, suspended bool) string {
	switch {
	case configMap && suspended:
		return ReasonBoth
	case configMap:
		return ReasonConfigMap
	case suspended:
		return ReasonSuspended
	}
	return ""
}

func sameConfig(a, b *ballastv1.BallastConfigSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.IdentityLabels, b.IdentityLabels) && a.OrphanTTL == b.OrphanTTL &&
		a.RetentionWindow == b.RetentionWindow && a.Suspended == b.Suspended && a.PolicyFloors == b.PolicyFloors
}
