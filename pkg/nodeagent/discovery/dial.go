package discovery

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// redialEvery is how often a refused connection to the API server is tried again.
const redialEvery = 250 * time.Millisecond

// waitForServer returns cfg for the informers with a dialer that, while the API server
// refuses connections (it is restarting), keeps dialling every redialEvery until it
// accepts or the request's context ends, instead of failing.
//
// Why: client-go's reflector retries a refused watch with its own exponential backoff
// (0.8 s doubling to 30 s, jitter ×2, not configurable through the informers), so after
// an outage of a minute it found the server again only 30–60 s after its return (issue
// 12: 58–71 s). A dial that waits does not climb that ladder: the reflector's next watch or
// list connects within redialEvery of the port opening, and what it sees while the server
// finishes starting (429, 5xx) is retried from the bottom of the backoff, not the top.
//
// Only the discovery informers use it: requests that must fail fast (the debug endpoint's
// TokenReview and SubjectAccessReview) keep their own config.
func waitForServer(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	dial := cfg.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		for {
			c, err := dial(ctx, network, addr)
			if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
				return c, err
			}
			t := time.NewTimer(redialEvery)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, err
			case <-t.C:
			}
		}
	}
	return cfg
}
