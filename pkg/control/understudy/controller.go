// Package understudy protects singleton Deployments across node disruptions (SPEC §15):
// it surges a stand-in when a node is announced doomed, holds the doomed pod's eviction
// with HTTP 429 until the stand-in is Ready, and scales back once the doomed pod is gone.
// The controller runs on the leader; the eviction webhook (webhook.go) and the index it
// reads run on every replica. Doom signals come from package doom.
package understudy

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/understudy/doom"
)

// Reasons of the Supported and Ready conditions.
const (
	ReasonSupported      = "Supported"
	ReasonTargetMissing  = "TargetMissing"
	ReasonNotDeployment  = "NotADeployment"
	ReasonNotSingleton   = "NotASingleton"
	ReasonHPATargeted    = "HPATargeted"
	ReasonBallastItself  = "BallastWorkload"
	ReasonDuplicate      = "DuplicateTarget"
	ReasonRollingOut     = "RollingOut"
	ReasonProtected      = "Protected"
	ReasonSurging        = "WaitingForStandIn"
	ReasonStandInReady   = "StandInReady"
	ReasonHoldRelaxed    = "HoldRelaxed"
	actionSurge          = "understudy-surge"
	defaultRequeuePeriod = 30 * time.Second
)

// Options are the controller's settings.
type Options struct {
	// OperatorNamespace is Ballast's own namespace: its workloads are never protected.
	OperatorNamespace string
	// Keys are the configured extra doom taint keys.
	Keys doom.Keys
	// MaxHold clamps every hold (--understudy-max-hold); 0 leaves readinessDeadlineSeconds alone.
	MaxHold time.Duration
}

// Controller reconciles Understudies.
type Controller struct {
	clock   clock.PassiveClock
	reader  client.Reader // the Understudy cache: pods, nodes, deployments, HPAs, Understudies
	client  client.Client // writes
	state   *config.State
	metrics *Metrics
	events  *events.Recorder
	log     logr.Logger
	opts    Options
	reloc   relocations // relocation memory (relocate.go)
	optIns  optIns      // opt-in relocations in progress (optin.go)
}

// New returns the controller. reader serves every read (no API call); c writes.
func New(clk clock.PassiveClock, reader client.Reader, c client.Client, state *config.State, m *Metrics,
	ev *events.Recorder, log logr.Logger, o Options) *Controller {
	return &Controller{clock: clk, reader: reader, client: c, state: state, metrics: m, events: ev,
		log: log.WithValues("controller", "understudy"), opts: o}
}

// target is what one reconcile knows about the protected Deployment.
type target struct {
	dep  *appsv1.Deployment
	pods []corev1.Pod // the Deployment's pods, terminating ones included
}

// Gone forgets a deleted Understudy's gauge.
func (c *Controller) Gone(_ context.Context, key types.NamespacedName) (reconcile.Result, error) {
	c.metrics.Blocked.Forget(key)
	return reconcile.Result{}, nil
}

// Reconcile moves one Understudy through its phases (SPEC §15.4). It converges from the
// status and the Deployment alone, so a restart mid-surge resumes where it stopped. A
// status conflict (the webhook recorded blockedSince, or the cache lagged our own write)
// is retried shortly, not reported as an error.
func (c *Controller) Reconcile(ctx context.Context, u *ballastv1.Understudy) (reconcile.Result, error) {
	res, err := c.reconcile(ctx, u)
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	return res, err
}

func (c *Controller) reconcile(ctx context.Context, u *ballastv1.Understudy) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(u)
	log := c.log.WithValues("understudy", key.String())
	st := u.Status.DeepCopy()
	st.Mode, st.ObservedGeneration = ballastv1.UnderstudyHoldMode(u.Spec), u.Generation
	t, reason, msg, err := c.eligible(ctx, u)
	if err != nil {
		return reconcile.Result{}, err
	}
	if reason != "" {
		return c.unsupported(ctx, log, u, st, t, reason, msg)
	}
	c.setCond(st, u, ballastv1.ConditionSupported, true, ReasonSupported, "target is a singleton Deployment")
	if rollingOut(t.dep, st.OriginalReplicas != nil) {
		if st.OriginalReplicas != nil {
			if err := c.scaleBack(ctx, log, u, st, t, "target is rolling out"); err != nil {
				return reconcile.Result{}, err
			}
		}
		st.Phase, st.BlockedSince = ballastv1.UnderstudyIdle, nil
		c.setCond(st, u, ballastv1.ConditionReady, false, ReasonRollingOut, "standing down until the rollout settles")
		return reconcile.Result{}, c.writeStatus(ctx, u, st)
	}
	if st.OriginalReplicas == nil {
		return c.idle(ctx, log, u, st, t)
	}
	return c.surging(ctx, log, u, st, t)
}

// eligible checks SPEC §15.2; reason is "" when the Understudy is supported.
func (c *Controller) eligible(ctx context.Context, u *ballastv1.Understudy) (target, string, string, error) {
	var t target
	if u.Spec.TargetRef.Kind != ballastv1.KindDeployment {
		return t, ReasonNotDeployment, fmt.Sprintf("target kind %s is not supported: only a Deployment can run a stand-in beside its pod", u.Spec.TargetRef.Kind), nil
	}
	if u.Namespace == c.opts.OperatorNamespace {
		return t, ReasonBallastItself, "Ballast never protects its own workloads", nil
	}
	dep := &appsv1.Deployment{}
	if err := c.reader.Get(ctx, types.NamespacedName{Namespace: u.Namespace, Name: u.Spec.TargetRef.Name}, dep); err != nil {
		if apierrors.IsNotFound(err) {
			return t, ReasonTargetMissing, "Deployment " + u.Spec.TargetRef.Name + " does not exist", nil
		}
		return t, "", "", err
	}
	t.dep = dep
	var all ballastv1.UnderstudyList
	if err := c.reader.List(ctx, &all, client.InNamespace(u.Namespace)); err != nil {
		return t, "", "", err
	}
	for i := range all.Items {
		o := &all.Items[i]
		if o.Name != u.Name && o.Spec.TargetRef == u.Spec.TargetRef && older(o, u) {
			return t, ReasonDuplicate, "Understudy " + o.Name + " already covers this Deployment (the older wins)", nil
		}
	}
	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if err := c.reader.List(ctx, &hpas, client.InNamespace(u.Namespace)); err != nil {
		return t, "", "", err
	}
	for _, h := range hpas.Items {
		if h.Spec.ScaleTargetRef.Kind == ballastv1.KindDeployment && h.Spec.ScaleTargetRef.Name == dep.Name {
			return t, ReasonHPATargeted, "HorizontalPodAutoscaler " + h.Name + " scales the target", nil
		}
	}
	if r := replicas(dep); u.Status.OriginalReplicas == nil && r != 1 {
		return t, ReasonNotSingleton, fmt.Sprintf("the target has %d replicas; Understudy protects singletons", r), nil
	}
	pods, err := c.podsOf(ctx, dep)
	if err != nil {
		return t, "", "", err
	}
	t.pods = pods
	return t, "", "", nil
}

func older(a, b *ballastv1.Understudy) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// rollingOut reports a Deployment mid-rollout. During a surge the replica counts are
// short by design, so only a second template (updated < replicas) counts then.
func rollingOut(d *appsv1.Deployment, surging bool) bool {
	if d.Status.ObservedGeneration < d.Generation {
		return !surging
	}
	if surging {
		return d.Status.UpdatedReplicas < d.Status.Replicas
	}
	r := replicas(d)
	return d.Status.UpdatedReplicas < r || d.Status.AvailableReplicas < r || d.Status.Replicas > r
}

// podsOf lists the Deployment's pods from the cache.
func (c *Controller) podsOf(ctx context.Context, d *appsv1.Deployment) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil, nil
	}
	var list corev1.PodList
	if err := c.reader.List(ctx, &list, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if DeploymentOf(&p) == d.Name {
			out = append(out, p)
		}
	}
	return out, nil
}

// nodeSignal returns the merged doom signal of a node, ok false when it has none. A node
// missing from the cache is treated as deleted.
func (c *Controller) nodeSignal(ctx context.Context, name string) (doom.Signal, bool, error) {
	if name == "" {
		return doom.Signal{}, false, nil
	}
	n := &corev1.Node{}
	if err := c.reader.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return doom.Signal{Node: name, Class: doom.Involuntary, Source: doom.SourceNodeDeletion}, true, nil
		}
		return doom.Signal{}, false, err
	}
	s, ok := doom.Merge(doom.FromNode(n, c.opts.Keys))
	return s, ok, nil
}

func (c *Controller) unsupported(ctx context.Context, log logr.Logger, u *ballastv1.Understudy, st *ballastv1.UnderstudyStatus,
	t target, reason, msg string) (reconcile.Result, error) {
	if st.OriginalReplicas != nil && t.dep != nil {
		if err := c.scaleBack(ctx, log, u, st, t, "target became unsupported"); err != nil {
			return reconcile.Result{}, err
		}
	}
	prev := meta.FindStatusCondition(u.Status.Conditions, ballastv1.ConditionSupported)
	if prev == nil || prev.Status != metav1.ConditionFalse || prev.Reason != reason {
		log.Info("understudy unsupported", "reason", reason, "message", msg)
		c.events.Publish(unsupportedEvent(u, reason, msg))
	}
	st.Phase, st.BlockedSince = ballastv1.UnderstudyUnsupported, nil
	st.OriginalReplicas, st.DoomedPod, st.DoomedNode, st.DoomClass, st.DoomDeadline = nil, "", "", "", nil
	c.setCond(st, u, ballastv1.ConditionSupported, false, reason, msg)
	c.setCond(st, u, ballastv1.ConditionReady, false, reason, "nothing is held or surged")
	c.metrics.Blocked.Set(client.ObjectKeyFromObject(u), time.Time{})
	return reconcile.Result{}, c.writeStatus(ctx, u, st)
}

func (c *Controller) setCond(st *ballastv1.UnderstudyStatus, u *ballastv1.Understudy, typ string, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg,
		ObservedGeneration: u.Generation, LastTransitionTime: metav1.NewTime(c.clock.Now())})
}

// writeStatus updates the status when it changed; the resourceVersion guards against
// overwriting the webhook's blockedSince (a conflict requeues).
func (c *Controller) writeStatus(ctx context.Context, u *ballastv1.Understudy, st *ballastv1.UnderstudyStatus) error {
	if equality.Semantic.DeepEqual(&u.Status, st) {
		return nil
	}
	u.Status = *st
	if err := c.client.Status().Update(ctx, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating status of Understudy %s/%s: %w", u.Namespace, u.Name, err)
	}
	return nil
}
