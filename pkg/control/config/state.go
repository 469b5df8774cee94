// Package config tracks the cluster-wide settings every replica needs: BallastConfig
// "ballast" and the kill switch (SPEC §10). It runs on every replica, not only the leader,
// so every webhook server observes activation and release within seconds.
package config

import (
	"slices"
	"sync"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
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
}

// NewState returns an empty state: no BallastConfig, kill switch inactive.
func NewState() *State { return &State{} }

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
		a.RetentionWindow == b.RetentionWindow && a.Suspended == b.Suspended
}
