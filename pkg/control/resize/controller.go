// Package resize is the resize controller (SPEC §8–§10, ARCHITECTURE.md "Resize planner",
// "Resize outcomes and the Deferred ladder", "Fast raises"). Per profile and interval it
// evaluates the bound resize-mode pods with the one sizing calculator, plans each node's
// resizes together (shrinks first, growths that fit, the Deferred ladder for those that do
// not), sends pods/resize patches, and records every outcome on the pod, in events,
// metrics and, through the pod annotations the profiles controller counts, the profile's
// status.resize. It runs on the leader.
//
// The pure planning (accounting, the node planner, the ladder's hand-over and cap, the §9
// outcome state machine, the target math of caps, reverts and fast raises) is
// pkg/resizeplan; this package reads, writes and records. One concern per file:
// annotations.go, events.go, metrics.go, apierror.go (API errors as outcomes), guard.go
// (the node guard key), node.go (one node's pass), climb.go and capdeferred.go (the
// ladder's rungs), send.go (patches and their bookkeeping), outcomes.go (the pod watch),
// oom.go (fast raises after OOM kills), pressure.go (fast raises under sustained memory
// pressure), revert.go (raise-back after a shrink).
package resize

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/hpa"
	"github.com/ballastk8s/ballast/pkg/control/reconciler"
	"github.com/ballastk8s/ballast/pkg/control/resolve"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Options are the controller's settings.
type Options struct {
	// DryRun is true when --dry-run is resize or all (SPEC §10.3).
	DryRun bool
	// DonorWait is rung 1's time limit: how long a growth sent after donor shrinks may stay
	// Deferred before the ladder moves on. Default 1m.
	DonorWait time.Duration
	// HandOverWait is rung 2's time limit: how long after the guard was released for
	// scheduler preemption the growth may stay Deferred before it is capped. Default 1m.
	HandOverWait time.Duration
	// GuardHold bounds how long the guard key stays on a node without a plan needing it
	// (the cluster offers no TTL). Default 5m.
	GuardHold time.Duration
	// Relocator is rung 3 (Understudy); nil skips the rung.
	Relocator Relocator
	// ProfileRetry is when a profile-level skip is evaluated again (SPEC §8.1: 15m).
	ProfileRetry time.Duration
	// RevertWindow is how long after a shrink an OOM kill or NotReady raises the pod back
	// to its pre-shrink size (revert.go). Default 10m.
	RevertWindow time.Duration
	// OOM reads profiles' OOM streams for fast raises (nil: none), polled every OOMEvery
	// (default 1s).
	OOM      OOMSource
	OOMEvery time.Duration
	// Pressure reads profiles' memory-pressure streams for the pressure fast raise (nil:
	// off), tuned by PressureRaise (zero fields take the defaults; pressure.go).
	Pressure      PressureSource
	PressureRaise PressureOptions
	// PredictedRequests publishes autoscaling.k8s.io/predicted-pod-requests on the
	// Deployments and StatefulSets of admission-sized pods (off by default).
	PredictedRequests bool
	// RestartsFor says which changes restart a container beyond its resizePolicy (a
	// runtime that cannot shrink memory in place); nil: the resizePolicy alone decides.
	RestartsFor resizeplan.RestartHook
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.DonorWait, time.Minute)
	def(&o.HandOverWait, time.Minute)
	def(&o.GuardHold, 5*time.Minute)
	def(&o.ProfileRetry, 15*time.Minute)
	def(&o.RevertWindow, defaultRevertWindow)
	def(&o.OOMEvery, time.Second)
}

// Relocator is the Deferred ladder's rung 3: it moves a pod whose growth cannot fit on its
// node to a node with room without downtime (Understudy, SPEC §15.5). Relocate reports
// whether it took the pod over; the ladder then stops for it.
type Relocator interface {
	Relocate(ctx context.Context, pod *corev1.Pod, want corev1.ResourceList, reason string) (bool, error)
}

// podMark is per-pod ladder memory: a patch generation or a hand-over time.
type podMark struct {
	uid types.UID
	gen int64
	at  time.Time
}

// mark returns the pod's mark in m when it belongs to this pod (same UID).
func mark(m map[types.NamespacedName]podMark, pod *corev1.Pod) (podMark, bool) {
	v, ok := m[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]
	return v, ok && v.uid == pod.UID
}

// Controller is the resize controller.
type Controller struct {
	client   client.Client // the manager's client (cached reads)
	api      client.Reader // uncached reads: every pod of a node, nodes after a guard write
	state    *config.State
	resolver *resolve.Resolver
	// hpa and scaler are the behaviors.hpa guard (SetHPA); a nil hpa.Reader skips it.
	hpa     hpa.Lookup
	scaler  *hpa.Scaler
	metrics *Metrics
	events  *events.Recorder
	clock   clock.PassiveClock
	opts    Options
	log     logr.Logger

	mu sync.Mutex
	// since is the generation each pod's last Ballast patch produced (Observe's floor),
	// by pod name; the UID tells a re-created pod of the same name apart.
	since map[types.NamespacedName]podMark
	// guards are the nodes on which Ballast holds its key, with when it was taken.
	guards map[string]time.Time
	// noGuard are nodes where the API server dropped the field (gate off), until when.
	noGuard map[string]time.Time
	// handedOver are pods whose growth was handed to scheduler preemption (at = when).
	handedOver map[types.NamespacedName]podMark
	// planning counts the node passes in progress per node: the guard is never released
	// under a pass that may be about to send a growth.
	planning map[string]int
	// shrunk remembers each pod's size before Ballast's last shrink (raise-back, revert.go).
	shrunk *shrinkBook
	// history caches each profile's resize history (budget.go; status.resizeHistory).
	history *historyBook

	// pressure is the pressure fast raise (nil: off), polled on the same ticks (pressure.go).
	pressure *pressureWatch
	// The reconcilers over this state: ProfilePass and PodOutcomes (watches), FastRaise (ticks).
	profilePass *ProfilePass
	podOutcomes *PodOutcomes
	fastRaise   *FastRaise
	// startupBoosts takes startup boosts back once due (unboost.go).
	startupBoosts *StartupBoosts
	// predicted publishes predicted requests on each evaluated profile's workloads (nil:
	// off, Options.PredictedRequests).
	predicted *PredictedAnnotator
}

// New returns the resize controller, complete: clk is the clock of every decision (the
// real clock in production, a fake one in tests); api is the manager's APIReader; metrics
// come from NewMetrics; ev publishes its events (nil: none; dry-run publishes none, SPEC
// §10.3); log is the component logger (SPEC §11.4 --log-level-adjuster); o carries the
// time limits, the relocation rung and the fast raises' stream readers.
func New(clk clock.PassiveClock, c client.Client, api client.Reader, state *config.State, r *resolve.Resolver, m *Metrics,
	ev *events.Recorder, log logr.Logger, o Options) *Controller {
	o.defaults()
	if o.DryRun {
		ev = nil // dry-run emits no event (SPEC §10.3)
	}
	ctl := &Controller{client: c, api: api, state: state, resolver: r, metrics: m, events: ev, clock: clk, opts: o,
		log: log, since: map[types.NamespacedName]podMark{}, guards: map[string]time.Time{},
		noGuard: map[string]time.Time{}, handedOver: map[types.NamespacedName]podMark{}, planning: map[string]int{},
		shrunk: newShrinkBook(), history: newHistoryBook()}
	if o.Pressure != nil {
		ctl.pressure = newPressureWatch(o.Pressure, o.PressureRaise)
	}
	if o.PredictedRequests {
		ctl.predicted = NewPredictedAnnotator(c, api, state, r, o.DryRun)
	}
	ctl.profilePass, ctl.podOutcomes = &ProfilePass{c: ctl}, &PodOutcomes{c: ctl}
	ctl.startupBoosts = &StartupBoosts{c: ctl}
	ctl.fastRaise = newFastRaise(ctl, o.OOM, o.OOMEvery)
	return ctl
}

// Register wires the profile trigger (§8.1: create, delete, meetsThreshold flips; then
// every interval by requeue) and the pod outcome watch.
func (c *Controller) Register(mgr ctrl.Manager) error {
	flips := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*ballastv1.WorkloadProfile)
			n, ok2 := e.ObjectNew.(*ballastv1.WorkloadProfile)
			return ok1 && ok2 && o.Status.MeetsThreshold != n.Status.MeetsThreshold
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	if err := mgr.Add(c.fastRaise); err != nil {
		return err
	}
	// Release of the kill switch re-evaluates every profile at once instead of after the
	// 15m profile-level requeue.
	released := make(chan event.GenericEvent, 1)
	c.state.OnChange(func(old, new config.Snapshot) {
		if old.Active() && !new.Active() {
			select {
			case released <- event.GenericEvent{Object: &ballastv1.WorkloadProfile{}}:
			default:
			}
		}
	})
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("resize").
		WithLogConstructor(reconciler.LogConstructor(c.log, "resize", "WorkloadProfile")).
		For(&ballastv1.WorkloadProfile{}, builder.WithPredicates(flips)).
		WatchesRawSource(source.Channel(released, handler.EnqueueRequestsFromMapFunc(c.allProfiles))).
		Complete(reconciler.For(c.client, func() *ballastv1.WorkloadProfile { return &ballastv1.WorkloadProfile{} }, c.profilePass)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("startup-boost").
		WithLogConstructor(reconciler.LogConstructor(c.log, "startup-boost", "Pod")).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(boostActive))).
		Complete(reconciler.For(c.client, func() *corev1.Pod { return &corev1.Pod{} }, c.startupBoosts)); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("resize-outcomes").
		WithLogConstructor(reconciler.LogConstructor(c.log, "resize-outcomes", "Pod")).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(watched))).
		Complete(reconciler.For(c.client, func() *corev1.Pod { return &corev1.Pod{} }, c.podOutcomes))
}

func (c *Controller) allProfiles(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &ballastv1.WorkloadProfileList{}
	if err := c.client.List(ctx, list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

// watched selects the pods the outcome watch follows: resize mode with a resize-state.
func watched(o client.Object) bool {
	return o.GetLabels()[ballastv1.ModeLabel] == ballastv1.ModeResize && o.GetAnnotations()[ballastv1.ResizeStateAnnotation] != ""
}

// profileCtx is what one profile evaluation shares with its node passes.
type profileCtx struct {
	profile  *ballastv1.WorkloadProfile
	policy   *policy.Compiled
	recs     sizing.Recommendations
	params   sizing.Params
	interval time.Duration
	now      time.Time
	// budget is the pass's disruption-budget state, read on first use (budget.go).
	budget *passBudget
}

// policyLabel is the policy attribute of metrics and logs: <name> or <namespace>/<name>.
func (p *profileCtx) policyLabel() string { return p.policy.RefAnnotation() }

// ProfilePass is the resize controller's profile reconciler (SPEC §8.1–§8.4): profile
// gating, the per-pod chain, one planned pass per node. It shares the controller's node
// passes and ladder state with the other reconcilers (PodOutcomes, the fast raises).
type ProfilePass struct{ c *Controller }

// ProfilePass returns the profile reconciler (registered by Register; tests call it).
func (c *Controller) ProfilePass() *ProfilePass { return c.profilePass }

// Reconcile evaluates one profile (SPEC §8.1–§8.4).
func (p *ProfilePass) Reconcile(ctx context.Context, wp *ballastv1.WorkloadProfile) (reconcile.Result, error) {
	c := p.c
	log := ctrl.LoggerFrom(ctx)
	if !wp.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	skip := func(reason string) (reconcile.Result, error) {
		c.metrics.Skipped.WithLabelValues(reason, "", "", wp.Name).Inc()
		return reconcile.Result{RequeueAfter: c.opts.ProfileRetry}, nil
	}
	// Profile-level gating, each counted once per evaluation (§8.1).
	if snap := c.state.Get(); snap.Active() {
		c.state.Suppress(log, snap, config.ActionResize, "kill switch active, no resize issued", "profile", wp.Name)
		return skip(ReasonKillSwitch)
	}
	if !wp.Status.MeetsThreshold {
		log.V(1).Info("profile not ready, no resize", "profile", wp.Name)
		return skip(ReasonNotReady)
	}
	pol, reason, err := c.loadPolicy(ctx, wp.Status.PolicyRef)
	if err != nil {
		return reconcile.Result{}, err
	}
	if reason != "" {
		log.V(1).Info("no usable policy, no resize", "profile", wp.Name, "reason", reason)
		return skip(reason)
	}
	recs, problems := sizing.ParseRecommendations(wp.Status.Containers)
	for _, p := range problems {
		log.V(1).Info("ignoring an unreadable recommendation", "profile", wp.Name, "problem", p.String())
	}
	pc := &profileCtx{profile: wp, policy: pol, recs: recs, params: sizing.ParamsFor(pol),
		interval: pol.Resize.Interval, now: c.clock.Now()}
	if c.predicted != nil {
		if err := c.predicted.Reconcile(ctx, PredictedInput{Profile: wp, Recommendations: recs, Params: pc.params, HPA: pol.HPA}); err != nil {
			log.Error(err, "publishing predicted requests")
		}
	}
	pods, err := c.candidates(ctx, wp.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	byNode := map[string][]proposal{}
	for _, pod := range pods {
		if boostActive(pod) {
			// The startup boost owns the pod's cpu until it has been taken back.
			c.metrics.Skipped.WithLabelValues(ReasonStartupBoost, pc.policyLabel(), pod.Namespace, wp.Name).Inc()
			continue
		}
		if p, ok := c.evaluate(ctx, pc, pod); ok {
			byNode[pod.Spec.NodeName] = append(byNode[pod.Spec.NodeName], p)
		}
	}
	var errs []error
	requeue := false
	for node, props := range byNode {
		again, err := c.planNode(ctx, pc, node, props)
		requeue = requeue || again
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	if requeue { // a 409: decide again on the fresh pod now, not in an interval
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	return reconcile.Result{RequeueAfter: pc.interval}, nil
}

// loadPolicy returns the profile's compiled policy, or the profile-level skip reason
// (no_policy, invalid_policy), through the resolver's one by-reference load (its memo and
// the floors admission and enrollment use).
func (c *Controller) loadPolicy(ctx context.Context, ref *ballastv1.PolicyRef) (*policy.Compiled, string, error) {
	if ref == nil {
		return nil, ReasonNoPolicy, nil
	}
	compiled, err := c.resolver.Policy(ctx, *ref)
	var invalid *policy.ValidationError
	switch {
	case errors.As(err, &invalid):
		return nil, ReasonInvalidPolicy, nil
	case err != nil:
		return nil, "", err
	case compiled == nil:
		return nil, ReasonNoPolicy, nil
	}
	return compiled, "", nil
}

// candidates are the live, Running, bound pods of the profile in mode resize (§8.1).
func (c *Controller) candidates(ctx context.Context, profile string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	// Read the cache's objects and copy only the candidates: every profile's reconcile comes
	// here, most with no pod in resize mode.
	if err := c.client.List(ctx, list, client.MatchingFields{enrollment.ProfileRefIndex: profile}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" &&
			p.Labels[ballastv1.ModeLabel] == ballastv1.ModeResize {
			out = append(out, p.DeepCopy())
		}
	}
	return out, nil
}
