// Package bounds reads, from the manager's caches, what keeps a sized pod admissible and a
// profile's values trusted (sizing.Bounds): the namespace's LimitRanges and ResourceQuotas
// and the largest node's allocatable. The webhook and the resize controller both call it,
// so admission and resize are bounded alike.
package bounds

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// Source reads bounds from a cache.
type Source struct {
	reader client.Reader
	// NodeCap caps recommendations at the largest node's allocatable (the default).
	NodeCap bool
	// Admin returns the administrator's bounds (BallastConfig spec.bounds), nil for none;
	// a nil Admin is none. See admin.go.
	Admin func() *ballastv1.NodeBounds

	// With a Node informer watched (Watch), the largest allocatable is recomputed only
	// after a node event, not on every admission.
	watched atomic.Bool
	dirty   atomic.Bool
	mu      sync.Mutex
	nodeMax map[corev1.ResourceName]sizing.Range
	// selector is the trusted-node selector nodeMax was computed with ("" for every node).
	selector string
}

// Watch makes s recompute the node cap only after inf (the cache's Node informer) reports
// a node added, changed or deleted.
func (s *Source) Watch(inf interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}) error {
	s.dirty.Store(true)
	mark := func() { s.dirty.Store(true) }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { mark() },
		UpdateFunc: func(any, any) { mark() },
		DeleteFunc: func(any) { mark() },
	}); err != nil {
		return fmt.Errorf("watching nodes for the allocatable cap: %w", err)
	}
	s.watched.Store(true)
	return nil
}

// New returns a Source over reader (the manager's cache) with the node cap on.
func New(reader client.Reader) *Source { return &Source{reader: reader, NodeCap: true} }

// Objects are the cached objects a pod's namespace bounds it with.
type Objects struct {
	LimitRanges []corev1.LimitRange
	Quotas      []corev1.ResourceQuota
	// NodeMax is the largest node's allocatable per resource (empty without nodes or
	// with the node cap off).
	NodeMax map[corev1.ResourceName]sizing.Range
}

// Read lists the namespace's LimitRanges and ResourceQuotas and the nodes' allocatable.
func (s *Source) Read(ctx context.Context, namespace string) (Objects, error) {
	var o Objects
	lrs := &corev1.LimitRangeList{}
	if err := s.reader.List(ctx, lrs, client.InNamespace(namespace)); err != nil {
		return o, fmt.Errorf("listing LimitRanges of %s: %w", namespace, err)
	}
	qs := &corev1.ResourceQuotaList{}
	if err := s.reader.List(ctx, qs, client.InNamespace(namespace)); err != nil {
		return o, fmt.Errorf("listing ResourceQuotas of %s: %w", namespace, err)
	}
	o.LimitRanges, o.Quotas = lrs.Items, qs.Items
	var admin *ballastv1.NodeBounds
	if s.Admin != nil {
		admin = s.Admin()
	}
	if !s.NodeCap {
		o.NodeMax = adminMax(nil, admin)
		return o, nil
	}
	nodeMax, err := s.largest(ctx, admin)
	o.NodeMax = adminMax(nodeMax, admin)
	return o, err
}

// largest is LargestAllocatable over the cached nodes admin trusts, memoized between node
// events (and changes of the selector) when watched.
func (s *Source) largest(ctx context.Context, admin *ballastv1.NodeBounds) (map[corev1.ResourceName]sizing.Range, error) {
	sel, selKey, err := trustedSelector(admin)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watched.Load() && !s.dirty.Load() && s.selector == selKey {
		return s.nodeMax, nil
	}
	s.dirty.Store(false) // an event from here on marks it again
	nodes := &corev1.NodeList{}
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	if sel != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	if err := s.reader.List(ctx, nodes, opts...); err != nil {
		s.dirty.Store(true)
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	s.nodeMax, s.selector = LargestAllocatable(nodes.Items), selKey
	if sel != nil {
		for res, r := range s.nodeMax {
			r.MaxFrom = "largest trusted node allocatable " + r.Max.String(res)
			s.nodeMax[res] = r
		}
	}
	return s.nodeMax, nil
}

// Params returns p bounded by o.
func (o Objects) Params(p sizing.Params) sizing.Params {
	return p.WithBounds(o.LimitRanges, o.Quotas, o.NodeMax)
}

// capped are the resources the node cap applies to.
var capped = [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// LargestAllocatable is, per resource, the largest status.allocatable over nodes: no pod's
// container can use more, so no recommendation above it is trusted.
func LargestAllocatable(nodes []corev1.Node) map[corev1.ResourceName]sizing.Range {
	out := map[corev1.ResourceName]sizing.Range{}
	for _, res := range capped {
		var best sizing.Units
		found := false
		for i := range nodes {
			q, ok := nodes[i].Status.Allocatable[res]
			if !ok {
				continue
			}
			if u := sizing.UnitsOf(res, q); !found || u > best {
				best, found = u, true
			}
		}
		if found && best > 0 {
			out[res] = sizing.Range{Max: best, HasMax: true, MaxFrom: "largest node allocatable " + best.String(res)}
		}
	}
	return out
}
