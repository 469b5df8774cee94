package profiles

import (
	"sync"
)

// problemLog remembers the last problem logged per policy, so a policy that cannot be
// computed logs once per change, not on every recompute of each of its profiles.
type problemLog struct {
	mu   sync.Mutex
	last map[string]string
}

// changed records detail ("" = none) for policy and reports whether it is new.
func (p *problemLog) changed(policy, detail string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]string{}
	}
	if detail == "" {
		delete(p.last, policy)
		return false
	}
	if p.last[policy] == detail {
		return false
	}
	p.last[policy] = detail
	return true
}
