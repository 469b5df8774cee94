package resize

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/sizing"
	"github.com/ballastk8s/ballast/pkg/store"
)

// OOMSource reads a profile's OOM stream (store.Reader.ReadOOM).
type OOMSource interface {
	ReadOOM(ctx context.Context, profile, afterID string) ([]store.OOMRecord, error)
}

// oomLookback is how old a kill found on a profile's first read may be and still raise.
const oomLookback = 2 * time.Minute

// FastRaise is the resize controller's fast-raise reconciler (ARCHITECTURE.md "Fast
// raises"), leader only: each tick it reads the OOM and pressure streams of the profiles
// with Running resize-mode pods and raises the killed or stalled containers in place, and
// every guardSweep it applies the guard time limit. It shares the node passes and ladder
// state with ProfilePass and PodOutcomes.
type FastRaise struct {
	c          *Controller
	src        OOMSource
	every      time.Duration
	guardSweep time.Duration
	lastSweep  time.Time
	last       map[string]string // profile hash → last stream ID seen
	retry      map[types.UID]series.OOMEvent
}

func newFastRaise(c *Controller, src OOMSource, every time.Duration) *FastRaise {
	return &FastRaise{c: c, src: src, every: every, guardSweep: 30 * time.Second,
		last: map[string]string{}, retry: map[types.UID]series.OOMEvent{}}
}

// FastRaise returns the fast-raise reconciler (added to the manager by Register; tests
// call its Reconcile).
func (c *Controller) FastRaise() *FastRaise { return c.fastRaise }

// NeedLeaderElection: only the leader raises pods and sweeps guards.
func (f *FastRaise) NeedLeaderElection() bool { return true }

// Start runs a tick every `every` until ctx ends.
func (f *FastRaise) Start(ctx context.Context) error {
	t := time.NewTicker(f.every)
	defer t.Stop()
	f.lastSweep = f.c.clock.Now()
	log := f.c.log.WithName("background")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := f.Reconcile(ctrl.LoggerInto(ctx, log)); err != nil {
			log.Error(err, "fast raise tick")
		}
	}
}

// Reconcile is one tick: the OOM streams (when a reader is set), the pressure streams
// (when the pressure raise is on), then the guard sweep once guardSweep has passed since
// the last one. Errors of one stream do not stop the others.
func (f *FastRaise) Reconcile(ctx context.Context) error {
	var errs []error
	if f.src != nil {
		if err := f.pollOOM(ctx); err != nil {
			errs = append(errs, fmt.Errorf("reading OOM streams: %w", err))
		}
	}
	if err := f.c.pollPressure(ctx); err != nil {
		errs = append(errs, fmt.Errorf("reading pressure streams: %w", err))
	}
	if f.c.clock.Since(f.lastSweep) >= f.guardSweep {
		f.lastSweep = f.c.clock.Now()
		f.c.sweepGuards(ctx)
	}
	return errors.Join(errs...)
}

// sweepGuards applies the guard time limit on every node Ballast holds a key on, including
// keys left by an earlier leader.
func (c *Controller) sweepGuards(ctx context.Context) {
	nodes := &corev1.NodeList{}
	if err := c.client.List(ctx, nodes); err == nil {
		for i := range nodes.Items {
			if ours, _ := guardKeys(&nodes.Items[i]); ours {
				c.mu.Lock()
				if _, ok := c.guards[nodes.Items[i].Name]; !ok {
					c.guards[nodes.Items[i].Name] = c.clock.Now()
				}
				c.mu.Unlock()
			}
		}
	}
	c.mu.Lock()
	held := make([]string, 0, len(c.guards))
	for n := range c.guards {
		held = append(held, n)
	}
	c.mu.Unlock()
	for _, n := range held {
		if err := c.releaseIfIdle(ctx, n); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "applying the guard time limit", "node", n)
		}
	}
}

// pollOOM reads the OOM streams of profiles that have resize-mode pods and raises the
// killed containers in place at once (ARCHITECTURE.md "Fast raises"): interval and
// cooldown are skipped, the guards (kill switch, dry-run, settling resize, QoS, node fit)
// are not.
func (f *FastRaise) pollOOM(ctx context.Context) error {
	c := f.c
	now := c.clock.Now()
	return eachResizeProfile(ctx, c.client, func(wp *ballastv1.WorkloadProfile, byKey map[string]*corev1.Pod) error {
		hash := wp.Status.MeasurementHash
		last, seen := f.last[hash]
		recs, err := f.src.ReadOOM(ctx, hash, last)
		if err != nil {
			return fmt.Errorf("reading OOM stream of %s: %w", wp.Name, err)
		}
		for _, r := range recs {
			f.last[hash] = r.ID
			if !seen && now.Sub(r.Event.At) > oomLookback {
				continue
			}
			if p := byKey[r.Event.Pod]; p != nil {
				f.retry[p.UID] = r.Event
			}
		}
		for _, p := range byKey {
			if ev, ok := f.retry[p.UID]; ok && c.raise(ctx, wp, p, ev) {
				delete(f.retry, p.UID)
			}
		}
		return nil
	})
}

// raise raises the killed container's memory limit to the OOM bump (max(peak × 1.2,
// peak + 100Mi), recommend.OOMBumpBytes), and its request with it when they were equal
// (a Guaranteed container stays Guaranteed). done is false when the pod must be tried
// again (a resize of it is still settling).
func (c *Controller) raise(ctx context.Context, wp *ballastv1.WorkloadProfile, pod *corev1.Pod, ev series.OOMEvent) (done bool) {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "container", ev.Container, "trigger", "oom")
	count := func(result string) { c.metrics.Raises.WithLabelValues("oom", result).Inc() }
	if ev.Kind == "node" {
		count("not_container")
		return true
	}
	if resizeplan.Settling(pod.Annotations[ballastv1.ResizeStateAnnotation]) {
		return false // never stack a resize on one that has not settled; next tick
	}
	ctr := resizeplan.ContainerNamed(pod, ev.Container)
	if ctr == nil || !slices.Contains(containerNames(pod), ev.Container) {
		count("no_container")
		return true
	}
	lim, hasLim := ctr.Resources.Limits[corev1.ResourceMemory]
	if !hasLim {
		count("no_limit")
		return true
	}
	bump := recommend.OOMBumpBytes(recommend.OOMEvent{Container: ev.Container, Time: ev.At, PeakBytes: ev.PeakBytes, LimitBytes: ev.LimitBytes})
	if c.revertOnOOM(ctx, wp, pod, ev.Container, ev.At, bump) {
		return true // shrunk shortly before: raised back (revert.go) instead
	}
	if bump <= lim.Value() {
		count("already_raised")
		return true
	}
	newLim := *resource.NewQuantity(bump, resource.BinarySI)
	ch, qosBefore, qosAfter := resizeplan.MemoryRaise(pod, ctr, lim, newLim)
	if qosAfter != qosBefore {
		count("qos_pinned")
		log.Info("fast raise would change the QoS class, skipped", "qos_current", qosBefore, "qos_after", qosAfter)
		return true
	}
	msg := fmt.Sprintf("container %s was OOM-killed at %s (%speak %d bytes, limit %s): memory limit raised in place to %s",
		ev.Container, ev.At.UTC().Format(time.RFC3339), oomDetail(ev), ev.PeakBytes, lim.String(), newLim.String())
	log.Info("fast raise after an OOM kill", "limit_before", lim.String(), "limit_after", newLim.String(),
		"kind", ev.Kind, "victim_pid", ev.PID, "victim_comm", ev.Comm, "victim_rss_bytes", ev.RSSBytes, "limit_cgroup", ev.LimitCgroupID)
	pc := &profileCtx{profile: wp, now: c.clock.Now()}
	if _, err := c.planNode(ctx, pc, pod.Spec.NodeName, []proposal{{pc: pc, pod: pod, changes: []sizing.ContainerChanges{ch}, why: "oom"}}); err != nil {
		count("error")
		log.Error(err, "fast raise failed")
		return false
	}
	count("sent")
	if !c.opts.DryRun && !c.state.Get().Active() {
		c.events.Publish(raisedEvent(pod, msg))
	}
	return true
}

func containerNames(pod *corev1.Pod) []string {
	var out []string
	for _, c := range sizing.LongRunningChanges(pod) {
		out = append(out, c.Name)
	}
	return out
}
