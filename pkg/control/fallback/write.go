package fallback

import (
	"context"
	"fmt"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
)

// ephemeralSuffix names a pod's ephemeral-storage cursor in the store's cursor hash (the
// Summary API's sample times are not metrics.k8s.io's).
const ephemeralSuffix = "/ephemeral-storage"

// measure offers the metrics.k8s.io readings to their pods, then decides and writes.
func (c *Controller) measure(ctx context.Context, now time.Time, hbs map[string]series.Heartbeat,
	pods map[string]enrolledPod, readings []Reading) error {
	byName := make(map[string]string, len(pods))
	for uid, ep := range pods {
		byName[ep.pod.Namespace+"/"+ep.pod.Name] = uid
	}
	c.mu.Lock()
	maxWindow := time.Duration(0)
	for _, r := range readings {
		maxWindow = max(maxWindow, r.Window)
		uid, ok := byName[r.Namespace+"/"+r.Name]
		if !ok || c.pods[uid] == nil {
			continue
		}
		c.pods[uid].offer(r.point)
	}
	if maxWindow > 0 {
		c.resolution = maxWindow
	}
	c.mu.Unlock()
	return c.flushDecided(ctx, now, hbs, pods, c.pods, "")
}

// flushDecided decides every held point of states (the usage or the ephemeral-storage
// points, cursor fields uid+suffix) and writes the fallback's through the store. A failed
// write puts the points back, so nothing is lost; the cursors make sure nothing is written
// twice.
func (c *Controller) flushDecided(ctx context.Context, now time.Time, hbs map[string]series.Heartbeat,
	pods map[string]enrolledPod, states map[string]*podState, suffix string) error {
	retention := ballastv1.DefaultRetentionWindow
	if snap := c.state.Get(); snap.Config != nil {
		retention, _ = ballastv1.RetentionWindow(*snap.Config)
	}
	window := series.DefaultLayout(retention).Window
	var ups []series.WindowUpdate
	cursors := map[string]time.Time{}
	written := map[string]decision{}
	c.mu.Lock()
	for uid, ps := range states {
		ep := pods[uid]
		if len(ps.pending) == 0 || ep.hash == "" {
			continue
		}
		hb, known := hbs[ep.pod.Spec.NodeName]
		d := ps.decide(hb, known, now)
		c.m.decided(d)
		if len(d.write) == 0 {
			continue
		}
		ups = append(ups, windowUpdates(ep.hash, d.write, longRunning(ep.pod), window)...)
		cursors[uid+suffix] = ps.cursor
		written[uid] = d
	}
	c.mu.Unlock()
	if len(ups) == 0 {
		return nil
	}
	if err := c.store.WriteFallback(ctx, retention, ups, cursors); err != nil {
		c.mu.Lock()
		for uid, d := range written { // offered again next cycle: nothing is lost
			if ps := states[uid]; ps != nil {
				ps.undo(d)
			}
		}
		c.mu.Unlock()
		return fmt.Errorf("writing fallback samples: %w", err)
	}
	end := c.clock.Now()
	for _, d := range written {
		for _, p := range d.write {
			c.m.written(p, end)
		}
	}
	return nil
}
