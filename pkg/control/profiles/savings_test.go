package profiles

import (
	"context"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/savings"
)

// TestSavingsGauges: a profile recommending 300m / 192Mi for pods requesting 500m / 512Mi
// exports 0.2 cores and 320Mi reclaimable per pod, summed over its two counted pods; the
// monthly savings series exists only with a price, and every series goes with the profile.
func TestSavingsGauges(t *testing.T) {
	wp := profile("shop", "h1")
	wp.Status.Containers = []ballastv1.ContainerProfile{{Name: "app",
		Recommendations: map[string]ballastv1.Recommendation{"cpu": {Request: "300m"}, "memory": {Request: "192Mi"}}}}
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		p := boundPod(name, "shop", ballastv1.ModeApply, nil)
		p.Spec.Containers = []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")}}}}
		p.Status.Phase = phase
		return p
	}
	f := newFixture(t, wp, pod("a", corev1.PodRunning), pod("b", corev1.PodPending), pod("done", corev1.PodSucceeded))
	f.reconcile(t, "shop")
	if got := testutil.ToFloat64(f.m.ReclaimableCPU.WithLabelValues("shop")); math.Abs(got-0.4) > 1e-12 {
		t.Errorf("reclaimable cpu = %v cores, want 0.4 (2 pods × 200m; the Succeeded pod holds nothing)", got)
	}
	if got := testutil.ToFloat64(f.m.ReclaimableMemory.WithLabelValues("shop")); got != 2*320*(1<<20) {
		t.Errorf("reclaimable memory = %v bytes, want 2 × 320Mi", got)
	}
	if n := testutil.CollectAndCount(f.m.MonthlySavings); n != 0 {
		t.Errorf("%d monthly savings series without a price, want 0", n)
	}
	f.ctrl.SetPrices(savings.Prices{CPUCoreHour: 0.03, MemoryGiBHour: 0.004})
	f.reconcile(t, "shop")
	// 730 h × (0.4 × 0.03 + 0.625 GiB × 0.004) = 10.585; tolerance 1e-9: float rounding.
	if got := testutil.ToFloat64(f.m.MonthlySavings.WithLabelValues("shop")); math.Abs(got-10.585) > 1e-9 {
		t.Errorf("monthly savings = %v, want 10.585", got)
	}
	if _, err := f.ctrl.Gone(context.Background(), types.NamespacedName{Name: "shop"}); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"cpu": testutil.CollectAndCount(f.m.ReclaimableCPU),
		"memory": testutil.CollectAndCount(f.m.ReclaimableMemory), "savings": testutil.CollectAndCount(f.m.MonthlySavings)} {
		if n != 0 {
			t.Errorf("%s: %d series after the profile is gone, want 0", name, n)
		}
	}
}
