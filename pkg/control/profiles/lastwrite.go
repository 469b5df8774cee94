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

// keyedMutex serializes passes over one profile. The manager's workqueue never hands one
// key to two workers, but Reconcile is also called beside it (the integration suites drive
// it directly under a fake clock), and two passes computing at different times would write
// their statuses in either order: the merge patch carries no resourceVersion.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	refs int
}

// lock takes name's lock and returns its release.
func (k *keyedMutex) lock(name string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[name]
	if l == nil {
		l = &keyLock{}
		k.m[name] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, name)
		}
		k.mu.Unlock()
	}
}
