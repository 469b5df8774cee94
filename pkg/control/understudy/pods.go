package understudy

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// notEnrolled selects the pods Understudy's own cache holds: those without the mode label.
// The enrolled ones are in the manager's cache already (app.CacheOptions); podReader reads
// both, so every pod of the cluster is cached once, not twice.
func notEnrolled() labels.Selector {
	r, err := labels.NewRequirement(ballastv1.ModeLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err) // a constant key always parses
	}
	return labels.NewSelector().Add(*r)
}

// podReader is Understudy's cache as a client.Reader whose pods are the union of its own
// (not enrolled) and the manager's (enrolled). A pod whose mode label was just added or
// removed can be in both for a moment (listed once, by UID) or, until the second cache
// sees it, in neither: Get then reports NotFound, as for a pod about to be created.
type podReader struct {
	client.Reader // Understudy's cache: not-enrolled pods, nodes, Deployments, HPAs, Understudies
	enrolled      client.Reader
}

func (r podReader) Get(ctx context.Context, key types.NamespacedName, obj client.Object, opts ...client.GetOption) error {
	err := r.Reader.Get(ctx, key, obj, opts...)
	if _, ok := obj.(*corev1.Pod); ok && apierrors.IsNotFound(err) {
		return r.enrolled.Get(ctx, key, obj, opts...)
	}
	return err
}

func (r podReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	pods, ok := list.(*corev1.PodList)
	if !ok {
		return r.Reader.List(ctx, list, opts...)
	}
	var more corev1.PodList
	if err := r.enrolled.List(ctx, &more, opts...); err != nil {
		return err
	}
	if err := r.Reader.List(ctx, pods, opts...); err != nil {
		return err
	}
	seen := make(map[types.UID]bool, len(pods.Items))
	for i := range pods.Items {
		seen[pods.Items[i].UID] = true
	}
	for _, p := range more.Items {
		if !seen[p.UID] {
			pods.Items = append(pods.Items, p)
		}
	}
	return nil
}
