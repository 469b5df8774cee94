package profiles

import (
	"sync"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// SetStatusRefresh sets --status-refresh-interval: how often, at most, a profile whose
// statistics alone moved is written (0: on every material change).
func (c *Controller) SetStatusRefresh(d time.Duration) { c.refresh = max(d, 0) }

// lastWrites remembers when this process last wrote each profile's status. A write that
// carries no statistics (none retained yet, or kept through a store reset with their old
// lastUpdated) is remembered here only; after a restart or a leader change the stored
// usageStats' lastUpdated stands in (LastStatusWrite), so the new leader writes at most
// once more.
type lastWrites struct {
	mu sync.Mutex
	at map[string]time.Time
}

// last is when the profile's status was last written, as far as this process or the
// stored statistics can tell.
func (w *lastWrites) last(name string, stored *ballastv1.WorkloadProfileStatus) time.Time {
	t := LastStatusWrite(stored)
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := w.at[name]; m.After(t) {
		t = m
	}
	return t
}

func (w *lastWrites) wrote(name string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == nil {
		w.at = map[string]time.Time{}
	}
	w.at[name] = at
}

func (w *lastWrites) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.at, name)
}
