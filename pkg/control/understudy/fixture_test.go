package understudy

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
)

// fixture runs the controller and the webhook over controller-runtime's fake client
// (in-memory, unit tests only) with a fake clock.
type fixture struct {
	t     testing.TB
	c     client.Client
	clock *clocktesting.FakeClock
	ctrl  *Controller
	ev    *Evictions
	idx   *Index
	m     *Metrics
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func newFixture(t testing.TB, objs ...client.Object) *fixture {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := ballastv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, clock: clocktesting.NewFakeClock(t0), idx: NewIndex()}
	f.c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&ballastv1.Understudy{}).Build()
	f.m = NewMetrics(prometheus.NewRegistry(), f.clock)
	o := Options{OperatorNamespace: "ballast-system"}
	st := config.NewState(nil)
	f.ctrl = New(f.clock, f.c, f.c, st, f.m, nil, logr.Discard(), o)
	f.ev = NewEvictions(f.clock, f.c, f.c, f.idx, st, f.m, nil, logr.Discard(), o)
	for _, obj := range objs {
		if u, ok := obj.(*ballastv1.Understudy); ok {
			f.idx.Upsert(u)
		}
	}
	return f
}

func (f *fixture) understudy(name string) *ballastv1.Understudy {
	u := &ballastv1.Understudy{}
	if err := f.c.Get(context.Background(), types.NamespacedName{Namespace: "app", Name: name}, u); err != nil {
		f.t.Fatal(err)
	}
	return u
}

func (f *fixture) reconcile(name string) *ballastv1.Understudy {
	f.t.Helper()
	if _, err := f.ctrl.Reconcile(context.Background(), f.understudy(name)); err != nil {
		f.t.Fatal(err)
	}
	return f.understudy(name)
}

func (f *fixture) deployment() *appsv1.Deployment {
	d := &appsv1.Deployment{}
	if err := f.c.Get(context.Background(), types.NamespacedName{Namespace: "app", Name: "web"}, d); err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) update(obj client.Object) {
	f.t.Helper()
	if err := f.c.Update(context.Background(), obj); err != nil {
		f.t.Fatal(err)
	}
}

func us(name, target string) *ballastv1.Understudy {
	return &ballastv1.Understudy{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, CreationTimestamp: metav1.NewTime(t0)},
		Spec: ballastv1.UnderstudySpec{TargetRef: ballastv1.UnderstudyTargetRef{Kind: "Deployment", Name: target},
			SurgeReplicas: 1, MinSurgeTimeSeconds: ptr.To[int32](60), ReadinessDeadlineSeconds: 600, HoldMode: ballastv1.HoldAlways}}
}

// settled is a singleton Deployment whose rollout is complete.
func settled(n int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", Generation: 1},
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: n, UpdatedReplicas: n, AvailableReplicas: n, ReadyReplicas: n}}
}

func pod(name, node string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name,
		Labels:          map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc12"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc12", UID: "rs", Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
}

func node(name string, cordoned bool) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
}

func withRV(f *fixture, obj client.Object) client.Object {
	cur := obj.DeepCopyObject().(client.Object)
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
		f.t.Fatal(err)
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	return obj
}

func getPod(f *fixture, name string) *corev1.Pod {
	p := &corev1.Pod{}
	if err := f.c.Get(context.Background(), types.NamespacedName{Namespace: "app", Name: name}, p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func mustCreate(f *fixture, obj client.Object) {
	f.t.Helper()
	if err := f.c.Create(context.Background(), obj); err != nil {
		f.t.Fatal(err)
	}
}

func clientObjects(xs []any) []client.Object {
	out := make([]client.Object, 0, len(xs))
	for _, x := range xs {
		out = append(out, x.(client.Object))
	}
	return out
}
