package policies

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Problem kinds reported once per change.
const (
	problemInvalid    = "invalid"
	problemNeverReady = "neverReady"
)

// problems remembers what was last reported per policy and kind of problem, so each
// problem is logged (and recorded as an event) once per change, never per reconcile.
type problems struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]map[string]string
}

// changed records detail ("" = no problem) for (key, kind) and reports whether it is a new
// problem: different from the last one reported. A cleared problem reports again when it
// comes back.
func (p *problems) changed(key types.NamespacedName, kind, detail string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[types.NamespacedName]map[string]string{}
	}
	old := p.seen[key][kind]
	if detail == "" {
		delete(p.seen[key], kind)
		return false
	}
	if old == detail {
		return false
	}
	if p.seen[key] == nil {
		p.seen[key] = map[string]string{}
	}
	p.seen[key][kind] = detail
	return true
}

// forget drops a deleted policy.
func (p *problems) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.seen, key)
}
