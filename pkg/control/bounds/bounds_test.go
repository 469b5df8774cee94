package bounds

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

func node(name, cpu, mem string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}
}

func TestLargestAllocatable(t *testing.T) {
	got := LargestAllocatable([]corev1.Node{*node("a", "4", "64Gi"), *node("b", "16", "32Gi")})
	want := map[corev1.ResourceName]sizing.Range{
		corev1.ResourceCPU:    {Max: 16000, HasMax: true, MaxFrom: "largest node allocatable 16"},
		corev1.ResourceMemory: {Max: 64 << 30, HasMax: true, MaxFrom: "largest node allocatable 64Gi"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := LargestAllocatable(nil); len(got) != 0 {
		t.Errorf("no nodes gave a cap: %v", got)
	}
}

// fakeInformer records the handler Watch adds, so the test can deliver node events.
type fakeInformer struct {
	h toolscache.ResourceEventHandler
}

func (f *fakeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	f.h = h
	return nil, nil
}

// TestReadMemoizesTheNodeCapBetweenNodeEvents: watched, the cap is recomputed only after a
// node event; a LimitRange is read on every call.
func TestReadMemoizesTheNodeCapBetweenNodeEvents(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(node("a", "4", "8Gi")).Build()
	src := New(c)
	inf := &fakeInformer{}
	if err := src.Watch(inf); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cpuMax := func() sizing.Units {
		o, err := src.Read(ctx, "team")
		if err != nil {
			t.Fatal(err)
		}
		return o.NodeMax[corev1.ResourceCPU].Max
	}
	if got := cpuMax(); got != 4000 {
		t.Fatalf("cap %d, want 4000", got)
	}
	if err := c.Create(ctx, node("b", "32", "8Gi")); err != nil {
		t.Fatal(err)
	}
	if got := cpuMax(); got != 4000 {
		t.Errorf("cap recomputed without a node event: %d", got)
	}
	inf.h.OnAdd(node("b", "32", "8Gi"), false)
	if got := cpuMax(); got != 32000 {
		t.Errorf("cap after the node event %d, want 32000", got)
	}
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "team"}}
	if err := c.Create(ctx, lr); err != nil {
		t.Fatal(err)
	}
	if o, err := src.Read(ctx, "team"); err != nil || len(o.LimitRanges) != 1 {
		t.Errorf("LimitRanges %v, err %v", o.LimitRanges, err)
	}
}
