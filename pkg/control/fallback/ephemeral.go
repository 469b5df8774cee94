package fallback

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ballastk8s/ballast/pkg/series"
)

// measureEphemeral reads the kubelet Summary of every node that needs the fallback
// (through the API server's node proxy), offers each enrolled pod's ephemeral-storage point
// and writes the decided ones: the same hand-over rule as metrics.k8s.io readings, with the
// Summary's own sample times and a cursor of its own. A node whose Summary cannot be read
// leaves its pods' ephemeral storage unmeasured, and the profiles say why.
func (c *Controller) measureEphemeral(ctx context.Context, now time.Time, hbs map[string]series.Heartbeat,
	pods map[string]enrolledPod, needNodes map[string]bool) error {
	if c.sum == nil {
		c.setEphemeral("no node proxy client")
		return nil
	}
	byNode := map[string]map[string]enrolledPod{}
	for uid, ep := range pods {
		n := ep.pod.Spec.NodeName
		if !needNodes[n] {
			continue
		}
		if byNode[n] == nil {
			byNode[n] = map[string]enrolledPod{}
		}
		byNode[n][uid] = ep
	}
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	var problem error
	for _, n := range nodes {
		b, err := c.sum.Summary(ctx, n)
		if err == nil {
			var pts map[string]point
			if pts, err = summaryPoints(b, byNode[n]); err == nil {
				c.mu.Lock()
				for uid, p := range pts {
					if ps := c.eph[uid]; ps != nil {
						ps.offer(p)
					}
				}
				c.mu.Unlock()
				continue
			}
		}
		if problem == nil {
			problem = fmt.Errorf("node %s: %w", n, err)
		}
	}
	switch {
	case problem == nil:
		c.setEphemeral("")
	case apierrors.IsForbidden(errors.Unwrap(problem)):
		c.setEphemeral("the kubelet Summary through the node proxy is forbidden (get on nodes/proxy)")
		problem = nil // said by the condition; not a cycle error
	default:
		c.setEphemeral("the kubelet Summary could not be read: " + firstLine(problem.Error()))
	}
	return errors.Join(problem, c.flushDecided(ctx, now, hbs, pods, c.eph, ephemeralSuffix))
}

func (c *Controller) setEphemeral(problem string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.view.eph = problem
}
