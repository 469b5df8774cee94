package understudy

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
	"github.com/ballastk8s/ballast/pkg/control/events"
	"github.com/ballastk8s/ballast/pkg/control/podcache"
	"github.com/ballastk8s/ballast/pkg/control/reconciler"
)

// Parts are what Setup builds: the controller (leader only), the webhook handler and the
// index (every replica).
type Parts struct {
	Controller *Controller
	Evictions  *Evictions
	Index      *Index
	Cache      cache.Cache
	// Relocator is the resize ladder's rung 3 (SPEC §15.5), leader only.
	Relocator *Relocator
}

// Setup builds Understudy on mgr: a cache of its own (the pods the manager's
// enrolled-pods cache leaves out, nodes, Deployments, HPAs, Understudies), read together
// with the manager's pods (podReader), the index, the controller and the eviction webhook at
// ballastv1.EvictionWebhookPath on the manager's webhook server.
func Setup(ctx context.Context, mgr ctrl.Manager, clk clock.PassiveClock, state *config.State, reg prometheus.Registerer,
	ev *events.Recorder, log logr.Logger, o Options) (*Parts, error) {
	uc, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
		// The pods the manager's cache does not hold, with only owner, node, phase and
		// readiness: together with the manager's, every pod of the cluster (podReader).
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: notEnrolled(), Transform: podcache.Placement}}})
	if err != nil {
		return nil, fmt.Errorf("creating the understudy cache: %w", err)
	}
	// Every replica: the eviction webhook reads this cache and the index it feeds. cache.New
	// returns a delegating cache here (ByObject), which does not say that it needs no
	// leader, and the manager starts such a runnable on the leader only: a non-leader's
	// index stayed empty and its webhook let every protected eviction through (found by
	// the two-node tier, test/twonode).
	if err := mgr.Add(everyReplica{uc}); err != nil {
		return nil, err
	}
	idx := NewIndex()
	inf, err := uc.GetInformer(ctx, &ballastv1.Understudy{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { upsert(idx, obj) },
		UpdateFunc: func(_, obj any) { upsert(idx, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*ballastv1.Understudy); ok {
				idx.Delete(types.NamespacedName{Namespace: u.Namespace, Name: u.Name})
			}
		},
	}); err != nil {
		return nil, err
	}
	// Start the informers the webhook reads with the cache, not on the first eviction.
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Node{}, &appsv1.Deployment{}, &autoscalingv2.HorizontalPodAutoscaler{}} {
		if _, err := uc.GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	m := NewMetrics(reg, clk)
	reader := podReader{Reader: uc, enrolled: mgr.GetCache()}
	podCaches := []cache.Cache{uc, mgr.GetCache()}
	p := &Parts{Index: idx, Cache: uc,
		Controller: New(clk, reader, mgr.GetClient(), state, m, ev, log, o),
		Evictions:  NewEvictions(clk, reader, mgr.GetClient(), idx, state, m, ev, log, o)}
	p.Relocator = NewRelocator(p.Controller, idx)
	if err := p.Controller.register(mgr, uc, podCaches, idx); err != nil {
		return nil, err
	}
	if err := p.Controller.registerOptIn(mgr, uc, podCaches); err != nil {
		return nil, err
	}
	mgr.GetWebhookServer().Register(ballastv1.EvictionWebhookPath, &admission.Webhook{Handler: p.Evictions})
	return p, nil
}

// everyReplica runs a cache on every replica, leader or not.
type everyReplica struct{ cache.Cache }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (everyReplica) NeedLeaderElection() bool { return false }

func upsert(idx *Index, obj any) {
	if u, ok := obj.(*ballastv1.Understudy); ok {
		idx.Upsert(u)
	}
}

// register adds the leader-only controller: Understudies, their Deployments and pods, HPAs,
// doom-relevant node changes and kill-switch changes.
func (c *Controller) register(mgr ctrl.Manager, uc cache.Cache, podCaches []cache.Cache, idx *Index) error {
	owner := func(ns, dep string) []reconcile.Request {
		if k, ok := idx.Owner(types.NamespacedName{Namespace: ns, Name: dep}); ok {
			return []reconcile.Request{{NamespacedName: k}}
		}
		return nil
	}
	all := func(ctx context.Context, ns string) []reconcile.Request {
		var l ballastv1.UnderstudyList
		opts := []client.ListOption{}
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := uc.List(ctx, &l, opts...); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(l.Items))
		for i := range l.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
		}
		return out
	}
	killChanged := make(chan event.GenericEvent, 1)
	c.state.OnChange(func(old, next config.Snapshot) {
		if old.Active() != next.Active() {
			select {
			case killChanged <- event.GenericEvent{Object: &ballastv1.Understudy{}}:
			default:
			}
		}
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("understudy").
		WatchesRawSource(source.Kind(uc, &ballastv1.Understudy{}, &handler.TypedEnqueueRequestForObject[*ballastv1.Understudy]{})).
		WatchesRawSource(source.Kind(uc, &appsv1.Deployment{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, d *appsv1.Deployment) []reconcile.Request { return owner(d.Namespace, d.Name) })))
	for _, pc := range podCaches {
		b = b.WatchesRawSource(source.Kind(pc, &corev1.Pod{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, p *corev1.Pod) []reconcile.Request {
				if dep := DeploymentOf(p); dep != "" && idx.Guards(p.Namespace) {
					return owner(p.Namespace, dep)
				}
				return nil
			})))
	}
	return b.WatchesRawSource(source.Kind(uc, &autoscalingv2.HorizontalPodAutoscaler{}, handler.TypedEnqueueRequestsFromMapFunc(
		func(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler) []reconcile.Request {
			return all(ctx, h.Namespace)
		}))).
		WatchesRawSource(source.Kind(uc, &corev1.Node{}, nodeHandler(func(ctx context.Context) []reconcile.Request { return all(ctx, "") }))).
		WatchesRawSource(source.Channel(killChanged, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, _ client.Object) []reconcile.Request { return all(ctx, "") }))).
		Complete(reconciler.For(uc, func() *ballastv1.Understudy { return &ballastv1.Understudy{} }, reconciler.Object[*ballastv1.Understudy](c)))
}

// nodeHandler enqueues every Understudy when a node's doom-relevant fields change
// (cordon, taints, deletion), not on status heartbeats.
func nodeHandler(all func(context.Context) []reconcile.Request) handler.TypedEventHandler[*corev1.Node, reconcile.Request] {
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, r := range all(ctx) {
			q.Add(r)
		}
	}
	return handler.TypedFuncs[*corev1.Node, reconcile.Request]{
		CreateFunc: func(ctx context.Context, _ event.TypedCreateEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, n := e.ObjectOld, e.ObjectNew
			if o.Spec.Unschedulable != n.Spec.Unschedulable || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
				add(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.TypedDeleteEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q)
		},
	}
}
