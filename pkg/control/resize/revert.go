package resize

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Raise-back after a shrink (ARCHITECTURE.md "Fast raises"): a pod that is OOM-killed or
// turns NotReady within RevertWindow of a Ballast shrink is raised back to what it held
// before that shrink, at once (interval and cooldown skipped, the guards and the node
// planner not), and the revert is noted on the pod and its profile (event ResizeReverted)
// and counted in ballast_resize_reverts_total{trigger,result,namespace,profile}.

// EventResizeReverted records a raise-back after a shrink, on the pod and on its profile.
const EventResizeReverted = "ResizeReverted"

// Revert triggers.
const (
	RevertOOM      = "oom"
	RevertNotReady = "not_ready"
)

// defaultRevertWindow is how long after a shrink an OOM kill or NotReady raises it back.
const defaultRevertWindow = 10 * time.Minute

// shrinkMark is what a pod held just before Ballast's last shrink of it.
type shrinkMark struct {
	uid types.UID
	at  time.Time
	// before are the full pre-shrink requests and limits of the containers the shrink cut.
	before []resizeplan.ContainerTarget
	// restarts are the containers' restart counts at the shrink: a later OOMKilled restart
	// is a kill after it (the kubelet reports what the node agent's stream may miss).
	restarts map[string]int32
	// ready is whether the pod was Ready at the shrink or since: only a pod that was Ready
	// can turn NotReady.
	ready bool
	// restartExpected is true for a shrink that restarts a container (resizeplan.Disruptive):
	// the NotReady of that restart is the resize working, so Ready counts only once a
	// container has restarted since the shrink.
	restartExpected bool
}

// restartedSince reports whether a container of pod restarted after the shrink m.
func restartedSince(pod *corev1.Pod, m shrinkMark) bool {
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if n, ok := m.restarts[st.Name]; ok && st.RestartCount > n {
			return true
		}
	}
	return false
}

// shrinkBook holds the marks by pod name (in memory: after a leader change, shrinks made
// by the previous leader are not raised back).
type shrinkBook struct {
	mu    sync.Mutex
	marks map[types.NamespacedName]shrinkMark
}

func newShrinkBook() *shrinkBook {
	return &shrinkBook{marks: map[types.NamespacedName]shrinkMark{}}
}

func (b *shrinkBook) get(pod *corev1.Pod) (shrinkMark, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.marks[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]
	return m, ok && m.uid == pod.UID
}

func (b *shrinkBook) put(pod *corev1.Pod, m shrinkMark) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.marks[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = m
}

// keep records an accepted shrink (m from shrinkOf; nil for a growth, which keeps an
// earlier shrink's mark).
func (b *shrinkBook) keep(pod *corev1.Pod, m *shrinkMark) {
	if m != nil {
		b.put(pod, *m)
	}
}

func (b *shrinkBook) drop(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.marks, key)
}

// RevertTrigger is what a pod shows since its shrink that asks for a raise-back: an
// OOMKilled restart after the shrink ("oom"), or a pod that was Ready now NotReady
// ("not_ready"); "" for neither. ready reports whether the pod is Ready now.
func RevertTrigger(pod *corev1.Pod, m shrinkMark) (trigger, detail string, ready bool) {
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if n, ok := m.restarts[st.Name]; ok && st.RestartCount > n &&
			st.LastTerminationState.Terminated != nil && st.LastTerminationState.Terminated.Reason == "OOMKilled" {
			return RevertOOM, fmt.Sprintf("container %s was OOM-killed (restart %d)", st.Name, st.RestartCount), false
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return "", "", true
		}
		if m.ready && pod.Status.Phase == corev1.PodRunning {
			why := c.Reason
			if c.Message != "" {
				why += ": " + c.Message
			}
			return RevertNotReady, "the pod turned NotReady (" + strings.TrimPrefix(why, ": ") + ")", false
		}
	}
	return "", "", false
}

// shrinkOf is what pod holds before changes when they cut anything, else nil; called just
// before the patch is sent and kept (shrinkBook.keep) once it was accepted.
func (c *Controller) shrinkOf(pod *corev1.Pod, changes []sizing.ContainerChanges) *shrinkMark {
	before := resizeplan.ShrunkContainers(pod, changes)
	if len(before) == 0 {
		return nil
	}
	disruptive := resizeplan.Disruptive(pod, changes, c.opts.RestartsFor)
	m := &shrinkMark{uid: pod.UID, at: c.clock.Now(), before: before, restarts: map[string]int32{},
		ready: podReady(pod) && !disruptive, restartExpected: disruptive}
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		m.restarts[st.Name] = st.RestartCount
	}
	return m
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// recentShrink returns the pod's shrink mark when the shrink is within the revert window.
func (c *Controller) recentShrink(pod *corev1.Pod) (shrinkMark, bool) {
	m, ok := c.shrunk.get(pod)
	if !ok {
		return m, false
	}
	if c.clock.Now().Sub(m.at) > c.opts.RevertWindow {
		c.shrunk.drop(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		return m, false
	}
	return m, true
}

// checkRevert is the pod watch's half: a pod shrunk within the window that shows an
// OOMKilled restart or turned NotReady is raised back. done is true when the raise-back
// was decided (the outcome watch stops for this event).
func (c *Controller) checkRevert(ctx context.Context, pod *corev1.Pod) (reconcile.Result, bool, error) {
	m, ok := c.recentShrink(pod)
	if !ok {
		return reconcile.Result{}, false, nil
	}
	trigger, detail, ready := RevertTrigger(pod, m)
	if ready && !m.ready && (!m.restartExpected || restartedSince(pod, m)) {
		m.ready = true
		c.shrunk.put(pod, m)
	}
	if trigger == "" || resizeplan.Settling(pod.Annotations[ballastv1.ResizeStateAnnotation]) || !pod.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, false, nil // a settling resize is waited for: its outcome re-triggers the watch
	}
	requeue, err := c.revertShrink(ctx, nil, pod, m, trigger, detail, "", 0)
	if requeue {
		return reconcile.Result{RequeueAfter: time.Second}, true, err
	}
	return reconcile.Result{}, true, err
}

// revertOnOOM is the OOM stream's half (fast raises): a kill of a pod shrunk within the
// window raises it back, with the memory limit at least the OOM bump. handled is false
// when there is no recent shrink (the ordinary fast raise applies) or it must be retried.
func (c *Controller) revertOnOOM(ctx context.Context, wp *ballastv1.WorkloadProfile, pod *corev1.Pod, container string, at time.Time, bump int64) (handled bool) {
	m, ok := c.recentShrink(pod)
	if !ok {
		return false
	}
	detail := fmt.Sprintf("container %s was OOM-killed at %s", container, at.UTC().Format(time.RFC3339))
	requeue, err := c.revertShrink(ctx, wp, pod, m, RevertOOM, detail, container, bump)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "raising back after a shrink failed", "namespace", pod.Namespace, "pod", pod.Name)
	}
	return err == nil && !requeue
}

// revertShrink sends the raise-back through the node planner and records it. requeue is
// true after a 409 (the mark stays; the caller retries).
func (c *Controller) revertShrink(ctx context.Context, wp *ballastv1.WorkloadProfile, pod *corev1.Pod, m shrinkMark,
	trigger, detail, floorCtr string, floorMem int64) (bool, error) {
	ref := pod.Annotations[ballastv1.ProfileRefAnnotation]
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", pod.Namespace, "pod", pod.Name, "profile", ref, "trigger", trigger)
	_, known := c.podAttrs(ctx, pod)
	count := func(result string) { c.metrics.Reverts.WithLabelValues(trigger, result, pod.Namespace, known).Inc() }
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	changes := resizeplan.RaiseBack(pod, m.before, floorCtr, floorMem)
	if len(changes) == 0 {
		c.shrunk.drop(key)
		count("already_raised")
		return false, nil
	}
	if sizing.QoSWith(pod, changes) != sizing.QoSWith(pod, nil) { // cannot happen for max(pre, cur); kept as the guard
		c.shrunk.drop(key)
		count("qos_pinned")
		return false, nil
	}
	if wp == nil {
		wp = &ballastv1.WorkloadProfile{}
		if err := c.client.Get(ctx, client.ObjectKey{Name: ref}, wp); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return false, err
			}
			wp.Name = ref
		}
	}
	summary := describeTargets(resizeplan.TargetsOf(pod, changes), pod)
	msg := fmt.Sprintf("%s %s after Ballast's shrink: raised back to the pre-shrink size (%s)",
		detail, c.clock.Now().Sub(m.at).Round(time.Second), summary)
	log.Info("raising back after a shrink", "since_shrink", c.clock.Now().Sub(m.at).String(), "changes", summary, "why", detail)
	gen := pod.Generation
	pc := &profileCtx{profile: wp, now: c.clock.Now()}
	requeue, err := c.planNode(ctx, pc, pod.Spec.NodeName, []proposal{{pc: pc, pod: pod, changes: changes, why: "revert"}})
	if err != nil {
		count("error")
		return false, err
	}
	if requeue {
		return true, nil
	}
	c.shrunk.drop(key)
	if pod.Generation == gen { // planned, not sent now: dry-run, kill switch, or the ladder took it
		count("planned")
		return false, nil
	}
	count("sent")
	if !c.opts.DryRun && !c.state.Get().Active() {
		c.events.Publish(revertedEvents(pod, wp, msg)...)
	}
	return false, nil
}

// describeTargets renders "app: cpu 300m→600m, memory limit 256Mi→512Mi" for the values
// that change.
func describeTargets(ts []resizeplan.ContainerTarget, pod *corev1.Pod) string {
	var parts []string
	for _, t := range ts {
		cur := resizeplan.ContainerNamed(pod, t.Name)
		var ch []string
		for _, f := range []struct {
			what     string
			cur, new corev1.ResourceList
		}{{"request", cur.Resources.Requests, t.Requests}, {"limit", cur.Resources.Limits, t.Limits}} {
			keys := make([]string, 0, len(f.new))
			for r := range f.new {
				keys = append(keys, string(r))
			}
			sort.Strings(keys)
			for _, r := range keys {
				n, o := f.new[corev1.ResourceName(r)], f.cur[corev1.ResourceName(r)]
				if n.Cmp(o) != 0 {
					ch = append(ch, fmt.Sprintf("%s %s %s→%s", r, f.what, o.String(), n.String()))
				}
			}
		}
		if len(ch) > 0 {
			parts = append(parts, t.Name+": "+strings.Join(ch, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
