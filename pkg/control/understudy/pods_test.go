package understudy

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// TestPodReaderUnion: Understudy reads a pod from whichever cache holds it (its own for
// pods without the mode label, the manager's for enrolled ones), lists the union once per
// pod, and reads everything else from its own cache only. The two caches are
// controller-runtime's fake client (in memory).
func TestPodReaderUnion(t *testing.T) {
	pod := func(name, uid string, mode bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(uid), Labels: map[string]string{"app": "web"}}}
		if mode {
			p.Labels[ballastv1.ModeLabel] = ballastv1.ModeApply
		}
		return p
	}
	if !notEnrolled().Matches(labels.Set(pod("a", "1", false).Labels)) || notEnrolled().Matches(labels.Set(pod("b", "2", true).Labels)) {
		t.Fatal("notEnrolled must select exactly the pods without the mode label")
	}
	moving := pod("moving", "3", true) // its label just changed: both caches hold it for a moment
	own := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(pod("plain", "1", false), moving.DeepCopy(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}).Build()
	mgr := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(pod("enrolled", "2", true), moving, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "only-in-manager"}}).Build()
	r := podReader{Reader: own, enrolled: mgr}
	ctx := context.Background()
	for _, name := range []string{"plain", "enrolled", "moving"} {
		if err := r.Get(ctx, types.NamespacedName{Namespace: "shop", Name: name}, &corev1.Pod{}); err != nil {
			t.Errorf("Get pod %s: %v", name, err)
		}
	}
	if err := r.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "gone"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("a pod in neither cache: %v, want NotFound", err)
	}
	if err := r.Get(ctx, types.NamespacedName{Name: "only-in-manager"}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("nodes are read from Understudy's cache only: %v", err)
	}
	var l corev1.PodList
	if err := r.List(ctx, &l, client.InNamespace("shop"), client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 3 {
		t.Errorf("listed %d pods, want plain, enrolled and moving once each", len(l.Items))
	}
}
