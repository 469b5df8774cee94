package events

import (
	"sync"
	"time"
)

// Limiter is a token bucket per key (a profile name): Burst events at once, then one per
// Every. client-go's spam filter keys on the involved object, so it cannot stop a rollout
// of many pods of one profile from writing one event per pod; this can.
type Limiter struct {
	Burst int
	Every time.Duration

	mu      sync.Mutex
	buckets map[string]bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewLimiter returns a limiter of burst events per key, refilled one per every.
func NewLimiter(burst int, every time.Duration) *Limiter {
	return &Limiter{Burst: burst, Every: every, buckets: map[string]bucket{}}
}

// Allow reports whether an event for key may be published at now, and takes a token.
func (l *Limiter) Allow(key string, now time.Time) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		b = bucket{tokens: float64(l.Burst), last: now}
	}
	if l.Every > 0 && now.After(b.last) {
		b.tokens = min(float64(l.Burst), b.tokens+float64(now.Sub(b.last))/float64(l.Every))
	}
	b.last = now
	allowed := b.tokens >= 1
	if allowed {
		b.tokens--
	}
	l.buckets[key] = b
	return allowed
}

// Forget drops the bucket of key (its profile is gone).
func (l *Limiter) Forget(key string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	delete(l.buckets, key)
	l.mu.Unlock()
}
