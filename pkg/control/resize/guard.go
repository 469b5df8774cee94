package resize

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

// noGuardRetry is how long a node whose API server dropped the field is not tried again.
const noGuardRetry = time.Hour

func ctrlKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// guardKeys returns Ballast's and the other owners' keys in the node's list.
func guardKeys(node *corev1.Node) (ours bool, others []string) {
	if node.Spec.PodPreemptionPolicy == nil {
		return false, nil
	}
	for _, k := range node.Spec.PodPreemptionPolicy.DisableResizePreemption {
		if k == ballastv1.ResizeGuardKey {
			ours = true
		} else {
			others = append(others, k)
		}
	}
	return ours, others
}

// preemptible reports whether scheduler resize preemption can fire on the node: its
// kubelet is 1.37 or newer (KEP-5836) and its API server has not dropped the field.
func (c *Controller) preemptible(node *corev1.Node, now time.Time) bool {
	c.mu.Lock()
	until, dropped := c.noGuard[node.Name]
	c.mu.Unlock()
	if dropped && now.Before(until) {
		return false
	}
	return atLeast137(node.Status.NodeInfo.KubeletVersion)
}

// atLeast137 parses "v1.37.2"-style versions; an unparseable one counts as new (guard).
func atLeast137(v string) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return true
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return true
	}
	return major > 1 || (major == 1 && minor >= 37)
}

// holdGuard is rung 0: before a growth that may not fit, Ballast's key goes into the
// node's spec.podPreemptionPolicy.disableResizePreemption by server-side apply under
// Ballast's field manager, which owns only its own value of the set (a strategic-merge
// patch would replace the whole list). needed is false when preemption cannot fire on the
// node, so growths go without a guard. The write is read back: an API server with the
// gate off drops the field silently.
func (c *Controller) holdGuard(ctx context.Context, node *corev1.Node) (needed bool, err error) {
	log := ctrl.LoggerFrom(ctx).WithValues("node", node.Name, "rung", resizeplan.RungGuard)
	now := c.clock.Now()
	if !c.preemptible(node, now) {
		return false, nil
	}
	if ours, _ := guardKeys(node); ours {
		c.mu.Lock()
		if _, ok := c.guards[node.Name]; !ok {
			c.guards[node.Name] = now
		}
		c.mu.Unlock()
		return true, nil
	}
	if c.opts.DryRun {
		log.Info("dry-run: would hold the resize-preemption guard on the node", "dry_run", true, "key", ballastv1.ResizeGuardKey)
		return true, nil
	}
	if snap := c.state.Get(); snap.Active() {
		return true, nil // sends are suppressed as well
	}
	ac := corev1ac.Node(node.Name).WithSpec(corev1ac.NodeSpec().WithPodPreemptionPolicy(
		corev1ac.NodePodPreemptionPolicy().WithDisableResizePreemption(ballastv1.ResizeGuardKey)))
	if err := c.client.Apply(ctx, ac, client.FieldOwner(ballastv1.FieldManager)); err != nil {
		c.metrics.Ladder.WithLabelValues(string(resizeplan.RungGuard), "error").Inc()
		return true, fmt.Errorf("holding the resize-preemption guard on node %s: %w", node.Name, err)
	}
	fresh := &corev1.Node{}
	if err := c.api.Get(ctx, ctrlKey(node.Name), fresh); err != nil {
		return true, fmt.Errorf("reading node %s back after the guard write: %w", node.Name, err)
	}
	if ours, _ := guardKeys(fresh); !ours {
		c.mu.Lock()
		c.noGuard[node.Name] = now.Add(noGuardRetry)
		c.mu.Unlock()
		c.metrics.Ladder.WithLabelValues(string(resizeplan.RungGuard), "unsupported").Inc()
		log.Info("the API server dropped spec.podPreemptionPolicy (InPlacePodVerticalScalingSchedulerPreemption off): no resize preemption, no guard needed")
		return false, nil
	}
	c.mu.Lock()
	c.guards[node.Name] = now
	n := len(c.guards)
	c.mu.Unlock()
	c.metrics.GuardNodes.Set(float64(n))
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungGuard), "held").Inc()
	log.Info("holding the resize-preemption guard on the node", "key", ballastv1.ResizeGuardKey)
	return true, nil
}

// releaseGuard applies Ballast's node configuration without the field: server-side apply
// removes exactly Ballast's value and leaves other owners' keys.
func (c *Controller) releaseGuard(ctx context.Context, node, why string) error {
	c.mu.Lock()
	_, held := c.guards[node]
	c.mu.Unlock()
	if !held || c.opts.DryRun {
		return nil
	}
	if err := c.client.Apply(ctx, corev1ac.Node(node), client.FieldOwner(ballastv1.FieldManager)); err != nil {
		c.metrics.Ladder.WithLabelValues(string(resizeplan.RungGuard), "error").Inc()
		return fmt.Errorf("releasing the resize-preemption guard on node %s: %w", node, err)
	}
	c.mu.Lock()
	delete(c.guards, node)
	n := len(c.guards)
	c.mu.Unlock()
	c.metrics.GuardNodes.Set(float64(n))
	c.metrics.Ladder.WithLabelValues(string(resizeplan.RungGuard), "released").Inc()
	ctrl.LoggerFrom(ctx).Info("released the resize-preemption guard on the node", "node", node, "why", why)
	return nil
}

// releaseIfIdle releases the guard of a node on which no Ballast resize is still settling
// (Pending, InProgress, Deferred) and no other node pass is running, or that has held it for
// longer than GuardHold. own is the number of passes of the caller itself on the node.
func (c *Controller) releaseIfIdle(ctx context.Context, node string, own ...int) error {
	mine := 0
	for _, n := range own {
		mine += n
	}
	c.mu.Lock()
	since, held := c.guards[node]
	planning := c.planning[node] - mine
	c.mu.Unlock()
	if !held || planning > 0 {
		return nil
	}
	pods, err := c.podsOn(ctx, node)
	if err != nil {
		return err
	}
	busy := slices.ContainsFunc(pods, func(p *corev1.Pod) bool {
		return p.Labels[ballastv1.ModeLabel] == ballastv1.ModeResize && resizeplan.Settling(p.Annotations[ballastv1.ResizeStateAnnotation])
	})
	switch {
	case !busy:
		return c.releaseGuard(ctx, node, "no Ballast resize is settling on the node")
	case c.clock.Now().Sub(since) >= c.opts.GuardHold:
		return c.releaseGuard(ctx, node, fmt.Sprintf("held for %s, the guard's time limit", c.opts.GuardHold))
	}
	return nil
}
