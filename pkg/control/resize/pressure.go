package resize

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/sizing"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Defaults of the pressure fast raise (ballast-control --pressure-raise-threshold and
// --pressure-raise-sustain).
const (
	// DefaultPressureThreshold: 10 % of the time stalled on memory.
	DefaultPressureThreshold = 0.10
	// DefaultPressureSustain: for at least 30 s without a break.
	DefaultPressureSustain = 30 * time.Second
)

// PressureSource reads a profile's memory-pressure stream (store.Reader.ReadPressure).
type PressureSource interface {
	ReadPressure(ctx context.Context, profile, afterID string) ([]store.PressureRecord, error)
}

// PressureOptions tune the fast raise under sustained memory pressure (ARCHITECTURE.md
// "Fast raises").
type PressureOptions struct {
	// Threshold is the share of the time a container must be stalled on memory, in (0, 1].
	// Default DefaultPressureThreshold.
	Threshold float64
	// Sustain is how long the stall must stay at or above Threshold without a break.
	// Default DefaultPressureSustain.
	Sustain time.Duration
}

// Validate checks the options after defaults.
func (o PressureOptions) Validate() error {
	switch {
	case o.Threshold*series.StallScale < series.PressureFloor || o.Threshold > 1:
		return fmt.Errorf("pressure raise threshold %v: must be within [%v, 1] (the node agent writes nothing below %v)",
			o.Threshold, float64(series.PressureFloor)/series.StallScale, float64(series.PressureFloor)/series.StallScale)
	case o.Sustain < time.Second:
		return fmt.Errorf("pressure raise sustain %v: must be ≥ 1s", o.Sustain)
	}
	return nil
}

const (
	// pressureFresh: a sustained run whose newest reading is older than this raises no more
	// (the pod was settling meanwhile and the pressure may be over).
	pressureFresh = time.Minute
	// pressureKeep is how long ended runs and raise marks are remembered.
	pressureKeep = 15 * time.Minute
)

// pressureWatch is the controller's pressure fast-raise state; only the background loop
// (leader) touches it.
type pressureWatch struct {
	src     PressureSource
	opts    PressureOptions
	tracker *resizeplan.PressureTracker
	last    map[string]string // profile hash → last stream ID seen
}

// newPressureWatch reads src's pressure streams on every background tick (1s) and raises a
// container whose memory pressure stays at or above o.Threshold for o.Sustain. Zero fields
// take the defaults.
func newPressureWatch(src PressureSource, o PressureOptions) *pressureWatch {
	if o.Threshold == 0 {
		o.Threshold = DefaultPressureThreshold
	}
	if o.Sustain == 0 {
		o.Sustain = DefaultPressureSustain
	}
	return &pressureWatch{src: src, opts: o, tracker: resizeplan.NewPressureTracker(o.Threshold, o.Sustain), last: map[string]string{}}
}

// pollPressure reads the new pressure readings of every profile with resize-mode pods and
// raises the containers whose pressure became sustained: interval and cooldown are
// skipped, the guards (kill switch, dry-run, settling resize, QoS, node fit) are not.
func (c *Controller) pollPressure(ctx context.Context) error {
	w := c.pressure
	if w == nil || w.src == nil {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	now := c.clock.Now()
	defer w.tracker.Prune(now, pressureKeep)
	return eachResizeProfile(ctx, c.client, func(wp *ballastv1.WorkloadProfile, byKey map[string]*corev1.Pod) error {
		hash := wp.Status.MeasurementHash
		recs, err := w.src.ReadPressure(ctx, hash, w.last[hash])
		if err != nil {
			return fmt.Errorf("reading the pressure stream of %s: %w", wp.Name, err)
		}
		changed := map[resizeplan.RunKey]*corev1.Pod{}
		for _, r := range recs {
			w.last[hash] = r.ID
			if r.Err != nil {
				log.V(1).Info("skipping an unreadable pressure reading", "profile", wp.Name, "error", r.Err.Error())
				continue
			}
			p := byKey[r.Reading.Pod]
			if p == nil || now.Sub(r.Reading.At) > pressureKeep {
				continue
			}
			k := resizeplan.RunKey{UID: p.UID, Container: r.Reading.Container}
			if w.tracker.Observe(k, r.Reading) {
				changed[k] = p
			}
		}
		for k, p := range changed {
			run, ok := w.tracker.Sustained(k)
			if !ok || now.Sub(run.End) > pressureFresh {
				continue
			}
			switch c.raiseOnPressure(ctx, wp, p, k.Container, run) {
			case raiseSent, raiseRefused:
				w.tracker.Restart(k, maxTime(now, run.End))
			case raiseLater:
				// Settling or failed: the next reading of the run tries again.
			}
		}
		return nil
	})
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// raiseResult says what a pressure raise attempt leaves to do.
type raiseResult int

const (
	raiseSent    raiseResult = iota // sent (or logged in dry-run): a new run must build up
	raiseRefused                    // not possible (no limit, QoS, at the node's size): same
	raiseLater                      // not now (settling, kill switch, error): on the next reading
)

// raiseOnPressure raises one container's memory limit one OOM step (max(limit × 1.2,
// limit + 100Mi), at most the node's allocatable memory), and its request with it when
// they were equal, so the QoS class stays.
func (c *Controller) raiseOnPressure(ctx context.Context, wp *ballastv1.WorkloadProfile, pod *corev1.Pod, container string, run *resizeplan.PressureRun) raiseResult {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "container", container,
		"trigger", "pressure", "profile", wp.Name)
	count := func(result string) { c.metrics.Raises.WithLabelValues("pressure", result).Inc() }
	if resizeplan.Settling(pod.Annotations[ballastv1.ResizeStateAnnotation]) {
		return raiseLater // never stack a resize on one that has not settled
	}
	if snap := c.state.Get(); snap.Active() {
		count("kill_switch")
		return raiseLater // planNode logs and counts the suppression
	}
	ctr := resizeplan.ContainerNamed(pod, container)
	if ctr == nil {
		count("no_container")
		return raiseRefused
	}
	lim, hasLim := ctr.Resources.Limits[corev1.ResourceMemory]
	if !hasLim {
		count("no_limit") // the stall comes from the node, not from a limit Ballast can raise
		return raiseRefused
	}
	target := recommend.OOMBumpBytes(recommend.OOMEvent{Container: container, PeakBytes: lim.Value(), LimitBytes: lim.Value()})
	node := &corev1.Node{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err == nil {
		if alloc, ok := node.Status.Allocatable[corev1.ResourceMemory]; ok && alloc.Value() > 0 {
			target = min(target, alloc.Value())
		}
	}
	if target <= lim.Value() {
		count("at_node_limit")
		log.Info("sustained memory pressure, but the limit is already the node's allocatable memory", "limit", lim.String())
		return raiseRefused
	}
	newLim := *resource.NewQuantity(target, resource.BinarySI)
	ch, qosBefore, qosAfter := resizeplan.MemoryRaise(pod, ctr, lim, newLim)
	if qosAfter != qosBefore {
		count("qos_pinned")
		log.Info("fast raise would change the QoS class, skipped", "qos_current", qosBefore, "qos_after", qosAfter)
		return raiseRefused
	}
	th := c.pressure.opts
	msg := fmt.Sprintf("container %s under sustained memory pressure: %.0f%% of the time stalled for %s (peak %.0f%%, %s; threshold %.0f%% for %s): memory limit raised in place from %s to %s",
		container, 100*run.Mean(), run.Covered().Round(time.Second), 100*float64(run.Peak)/series.StallScale, run.Source,
		100*th.Threshold, th.Sustain, lim.String(), newLim.String())
	log.Info("fast raise under sustained memory pressure", "stalled_share", run.Mean(), "stalled_for", run.Covered().String(),
		"source", run.Source, "limit_before", lim.String(), "limit_after", newLim.String(), "dry_run", c.opts.DryRun)
	pc := &profileCtx{profile: wp, now: c.clock.Now()}
	if _, err := c.planNode(ctx, pc, pod.Spec.NodeName, []proposal{{pc: pc, pod: pod, changes: []sizing.ContainerChanges{ch}, why: "pressure"}}); err != nil {
		count("error")
		log.Error(err, "fast raise failed")
		return raiseLater
	}
	if c.opts.DryRun {
		count("dry_run")
		return raiseSent
	}
	count("sent")
	c.events.Publish(raisedEvent(pod, msg))
	return raiseSent
}
