package agent

import (
	"context"
	"time"
)

// maxWait bounds how long a source's loop sleeps (the sampling loop's heartbeat stays fresh, a
// new pod reaches the Summary loop within it).
const maxWait = 5 * time.Second

// loop is every polling source's loop: it calls turn, which does what is due at now and
// returns when it is next due, then waits for that time, a wake-up (discovery changed;
// nil for none) or maxWait, whichever comes first, until ctx is done.
func (a *Agent) loop(ctx context.Context, wake <-chan struct{}, turn func(ctx context.Context, now time.Time) time.Time) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		next := turn(ctx, a.now())
		timer.Reset(max(min(next.Sub(a.now()), maxWait), 0))
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-timer.C:
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
