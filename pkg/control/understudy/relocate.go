package understudy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/events"
)

// Relocation (SPEC §15.5): the resize ladder's rung 3 hands over a resize-mode pod whose
// growth cannot fit on its node. The covering Understudy runs steps 1, 3 and 4 of §15.4
// with the pod's own node treated as doomed for that pod alone (no cordon): surge, wait
// for a Ready stand-in (sized by admission from the profile), then retire the old pod by
// scaling back to the recorded replica count, the deletion cost steering the ReplicaSet
// to it. Nobody evicts the old pod in a relocation, so the scale-back happens as soon as
// the stand-in is Ready, and a relax (deadline or kill switch) scales back at once.

const (
	// ClassRelocation is status.doomClass of a relocation surge: only the pod, not its
	// node, is doomed.
	ClassRelocation = "relocation"
	// SourceRelocation names the signal in events and logs.
	SourceRelocation = "relocation"
	// ReasonRelocating is the Ready condition's reason during a relocation surge.
	ReasonRelocating = "Relocating"
	// relocationBackoff is how long a pod whose relocation was relaxed is not relocated
	// again (the ladder caps it meanwhile).
	relocationBackoff = time.Hour
	actionRelocate    = "understudy-relocate"
)

// RelocationRecorder records a finished relocation as a resize outcome: the Relocated
// event on the old pod and ballast_resize_outcome_total{outcome="relocated"}. The resize
// controller implements it; package app connects the two.
type RelocationRecorder interface {
	Relocated(ctx context.Context, old *corev1.Pod, standIn, node string)
}

// relocations remembers pods whose relocation was relaxed (until when the ladder must not
// hand them over again), pods a relocation retired, and the recorder. Leader memory only:
// after a leader change a relaxed pod may be tried once more.
type relocations struct {
	mu      sync.Mutex
	backoff podsUntil
	// retired holds the pods relocations replaced, until when they are never relocated
	// again: the resize controller can reconcile a retired pod from its cache before the
	// pod's deletion reaches it, and relocating it a second time would surge the
	// Deployment for a pod that is gone, leaving the singleton at two replicas.
	retired podsUntil
	rec     RelocationRecorder
}

// podsUntil maps pods, by UID, to the time until which something holds for them.
type podsUntil map[types.UID]time.Time

// set records uid until t and drops the entries whose time has passed.
func (p *podsUntil) set(uid types.UID, now, t time.Time) {
	for k, until := range *p {
		if !now.Before(until) {
			delete(*p, k)
		}
	}
	if *p == nil {
		*p = podsUntil{}
	}
	(*p)[uid] = t
}

// holds reports whether uid's time has not passed yet.
func (p podsUntil) holds(uid types.UID, now time.Time) bool {
	until, ok := p[uid]
	return ok && now.Before(until)
}

// retire remembers that uid was replaced.
func (r *relocations) retire(uid types.UID, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retired.set(uid, now, now.Add(relocationBackoff))
}

// replaced reports whether uid was retired by a relocation lately.
func (r *relocations) replaced(uid types.UID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retired.holds(uid, now)
}

func (r *relocations) recorder() RelocationRecorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec
}

// failed keeps the ladder from handing uid over again for relocationBackoff.
func (r *relocations) failed(uid types.UID, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backoff.set(uid, now, now.Add(relocationBackoff))
}

func (r *relocations) blocked(uid types.UID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.backoff.holds(uid, now)
}

// Relocator implements the resize controller's rung 3 (resize.Relocator) over the
// Understudy controller and index.
type Relocator struct {
	c   *Controller
	idx *Index
}

// NewRelocator returns the relocator of c; idx resolves a pod's Deployment to its
// Understudy.
func NewRelocator(c *Controller, idx *Index) *Relocator { return &Relocator{c: c, idx: idx} }

// SetRecorder connects the resize controller's outcome record (nil: none).
func (r *Relocator) SetRecorder(rec RelocationRecorder) {
	r.c.reloc.mu.Lock()
	defer r.c.reloc.mu.Unlock()
	r.c.reloc.rec = rec
}

// Relocate starts the relocation of pod when an Understudy covers its Deployment (any hold
// mode) and it is eligible; took reports whether the pod was taken over (the ladder then
// stops for it). It is called on the leader by the resize controller; want is the growth
// the node cannot give, logged only: the stand-in is sized by admission.
func (r *Relocator) Relocate(ctx context.Context, pod *corev1.Pod, want corev1.ResourceList, reason string) (bool, error) {
	c := r.c
	log := c.log.WithValues("namespace", pod.Namespace, "pod", pod.Name, "node", pod.Spec.NodeName)
	dep := DeploymentOf(pod)
	if dep == "" {
		return false, nil
	}
	if snap := c.state.Get(); snap.Active() {
		c.state.Suppress(log, snap, actionRelocate, "kill switch active: not relocating", "deployment", dep)
		return false, nil
	}
	now := c.clock.Now()
	if pod.DeletionTimestamp != nil || c.reloc.replaced(pod.UID, now) {
		// Replaced already (a stale copy of a pod a relocation retired) or going: nothing
		// left for the ladder to do for it.
		log.V(1).Info("not relocating: the pod is replaced or terminating", "deployment", dep)
		return true, nil
	}
	if c.reloc.blocked(pod.UID, now) {
		log.Info("not relocating: a relocation of this pod was abandoned recently", "deployment", dep)
		return false, nil
	}
	key, ok := r.idx.Owner(types.NamespacedName{Namespace: pod.Namespace, Name: dep})
	if !ok {
		return r.relocateOptIn(ctx, log, pod, dep, reason)
	}
	u := &ballastv1.Understudy{}
	if err := c.reader.Get(ctx, key, u); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if u.Status.OriginalReplicas != nil {
		// A surge is under way: the pod is being replaced already when it is the doomed one.
		return u.Status.DoomedPod == pod.Name, nil
	}
	t, why, _, err := c.eligible(ctx, u)
	if err != nil || why != "" {
		if why != "" {
			log.Info("not relocating: the Understudy does not support the target", "understudy", key.String(), "reason", why)
		}
		return false, err
	}
	if rollingOut(t.dep, false) {
		log.Info("not relocating: the target is rolling out", "understudy", key.String())
		return false, nil
	}
	st := u.Status.DeepCopy()
	st.Mode, st.ObservedGeneration = ballastv1.UnderstudyHoldMode(u.Spec), u.Generation
	orig := replicas(t.dep)
	st.OriginalReplicas = &orig
	st.DoomedPod, st.DoomedNode, st.DoomClass, st.DoomDeadline = pod.Name, pod.Spec.NodeName, ClassRelocation, nil
	st.LastSurgeTime, st.BlockedSince = &metav1.Time{Time: now}, nil
	st.Phase = ballastv1.UnderstudySurging
	c.setCond(st, u, ballastv1.ConditionReady, false, ReasonRelocating, "relocating pod "+pod.Name+": waiting for a Ready stand-in")
	if err := c.writeStatus(ctx, u, st); err != nil {
		if apierrors.IsConflict(err) {
			return false, nil // the Understudy moved on; the ladder asks again later
		}
		return false, err
	}
	if err := c.markDoomed(ctx, pod); err != nil {
		return true, err
	}
	to := orig + ballastv1.UnderstudySurge(u.Spec)
	if err := c.patchReplicas(ctx, t, to); err != nil {
		return true, err // the Understudy's reconcile re-asserts the surge from its status
	}
	c.metrics.Surges.WithLabelValues(u.Namespace, u.Name).Inc()
	log.Info("relocation started", "understudy", key.String(), "replicas", to, "want", want, "why", reason)
	c.events.Publish(relocationEvent(u, pod.Name, pod.Spec.NodeName, reason, orig, to), podRelocationEvent(u, pod, reason))
	return true, nil
}

// relocating reports whether the surge in st is a relocation.
func relocating(st *ballastv1.UnderstudyStatus) bool { return st.DoomClass == ClassRelocation }

// retire ends a relocation whose stand-in is Ready: Releasing is persisted first (so a
// restart never raises the replicas again), the outcome is recorded once, then the
// Deployment goes back to originalReplicas and the deletion cost removes the old pod.
func (c *Controller) retire(ctx context.Context, log logr.Logger, u *ballastv1.Understudy, st *ballastv1.UnderstudyStatus,
	t target, old *corev1.Pod, standIn string) error {
	now := c.clock.Now()
	c.reloc.retire(old.UID, now) // after a restart in Releasing too
	if st.Phase != ballastv1.UnderstudyReleasing {
		st.Phase, st.BlockedSince = ballastv1.UnderstudyReleasing, nil
		c.setCond(st, u, ballastv1.ConditionReady, true, ReasonStandInReady, "stand-in "+standIn+" is Ready: retiring pod "+old.Name)
		if err := c.writeStatus(ctx, u, st); err != nil {
			return err
		}
		node := ""
		for i := range t.pods {
			if t.pods[i].Name == standIn {
				node = t.pods[i].Spec.NodeName
			}
		}
		log.Info("relocation: stand-in ready, retiring the old pod", "standIn", standIn, "node", node, "pod", old.Name)
		c.events.Publish(releasedEvent(u, standIn, old.Name))
		if rec := c.reloc.recorder(); rec != nil {
			rec.Relocated(ctx, old, standIn, node)
		}
	}
	if err := c.scaleBack(ctx, log, u, st, t, "relocation: stand-in "+standIn+" is Ready"); err != nil {
		return err
	}
	st.Phase = ballastv1.UnderstudyIdle
	c.setCond(st, u, ballastv1.ConditionReady, true, ReasonProtected, "pod "+old.Name+" relocated to "+standIn)
	return nil
}

// abandon ends a relocation that was relaxed (deadline or kill switch): nobody will evict
// the old pod, so the Deployment goes back to originalReplicas at once (the ReplicaSet
// removes the not-Ready stand-in first) and the pod is not handed over again for a while.
func (c *Controller) abandon(ctx context.Context, log logr.Logger, u *ballastv1.Understudy, st *ballastv1.UnderstudyStatus,
	t target, old *corev1.Pod) error {
	if old != nil {
		c.reloc.failed(old.UID, c.clock.Now())
	}
	if err := c.scaleBack(ctx, log, u, st, t, "relocation relaxed"); err != nil {
		return err
	}
	st.Phase = ballastv1.UnderstudyIdle
	c.setCond(st, u, ballastv1.ConditionReady, true, ReasonProtected, "relocation relaxed: back to the original replica count")
	return nil
}

func relocationEvent(u *ballastv1.Understudy, pod, node, why string, from, to int32) events.Event {
	return events.Event{Object: u, Type: corev1.EventTypeNormal, Reason: ReasonSurgeStarted,
		Message: fmt.Sprintf("relocating pod %s: its growth cannot fit on node %s (%s); scaling %s from %d to %d replicas",
			pod, node, why, u.Spec.TargetRef.Name, from, to)}
}

func podRelocationEvent(u *ballastv1.Understudy, pod *corev1.Pod, why string) events.Event {
	return events.Event{Object: pod, Type: corev1.EventTypeNormal, Reason: ReasonSurgeStarted,
		Message: fmt.Sprintf("growth cannot fit on node %s (%s): Understudy %s/%s is raising a stand-in sized at admission; this pod is retired once it is Ready",
			pod.Spec.NodeName, why, u.Namespace, u.Name)}
}

// relocationStep runs one reconcile of a relocation surge: retire once a stand-in is Ready,
// abandon on the kill switch or readinessDeadlineSeconds, else wait.
func (c *Controller) relocationStep(ctx context.Context, log logr.Logger, u *ballastv1.Understudy, st *ballastv1.UnderstudyStatus,
	t target, old *corev1.Pod, standIn string, deadline time.Time) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(u)
	now := c.clock.Now()
	res := reconcile.Result{}
	var err error
	switch {
	case standIn != "":
		err = c.retire(ctx, log, u, st, t, old, standIn)
	case c.state.Get().Active():
		c.relax(st, u, RelaxKillSwitch, "kill switch active")
		err = c.abandon(ctx, log, u, st, t, old)
	case !now.Before(deadline):
		c.relax(st, u, RelaxDeadline, fmt.Sprintf("no Ready stand-in for the relocation of pod %s within readinessDeadlineSeconds (%ds)",
			old.Name, ballastv1.UnderstudyReadinessDeadline(u.Spec)))
		err = c.abandon(ctx, log, u, st, t, old)
	default:
		res.RequeueAfter = min(defaultRequeuePeriod, deadline.Sub(now)+10*time.Millisecond)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if st.BlockedSince != nil && st.OriginalReplicas != nil {
		c.metrics.Blocked.Set(key, st.BlockedSince.Time)
	} else {
		c.metrics.Blocked.Set(key, time.Time{})
	}
	return res, c.writeStatus(ctx, u, st)
}
