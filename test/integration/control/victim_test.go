package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/enrollment"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// victimProfileCapped reproduces issue 12's attack: windows written under a victim's
// profile hash (derivable from public labels) with absurd values turn its recommendation
// into tens of cores and a terabyte. The profile shows them, but a new pod in another
// namespace is admitted with its values capped at the largest node's allocatable, and the
// pod's RecommendationBounded event says why.
func victimProfileCapped(t *testing.T, e *env) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "big"}}
	mustCreate(t, e.c, node)
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	node.Status.Allocatable = node.Status.Capacity
	if err := e.c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "node allocatable in the cache", func() error {
		n := &corev1.Node{}
		if err := e.app.Manager.GetCache().Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
			return err
		}
		if n.Status.Allocatable.Cpu().IsZero() {
			return fmt.Errorf("no allocatable yet")
		}
		return nil
	})

	e.sufficientProfile(t, "victim", 240, 192<<20) // 300m, 192Mi
	seed := pod("seed", e.namespace(t, "victim-src"), "measure", "prop", "victim")
	mustCreate(t, e.c, seed)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	wp := &ballastv1.WorkloadProfile{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		t.Fatal(err)
	}
	// The attacker's windows, under the victim's hash.
	for _, c := range []string{"app", "side"} {
		e.writeSamples(t, wp.Status.MeasurementHash, c, series.ResourceCPU, repeat(100_000_000, 13), 20*time.Second)
		e.writeSamples(t, wp.Status.MeasurementHash, c, series.ResourceMemory, repeat(1<<40, 13), 20*time.Second)
	}
	e.clock.Step(time.Second)
	e.reconcile(t, name)
	e.profile(t, name, "the victim profile poisoned", func(wp *ballastv1.WorkloadProfile) error {
		for _, c := range wp.Status.Containers {
			if r, ok := c.Recommendations["cpu"]; ok && c.Name == "app" && wp.Status.State == ballastv1.StateSufficient {
				if q, err := resource.ParseQuantity(r.Request); err == nil && q.Cmp(resource.MustParse("4")) > 0 {
					return nil
				}
				return fmt.Errorf("cpu request %s", r.Request)
			}
		}
		return fmt.Errorf("state %s, containers %v", wp.Status.State, wp.Status.Containers)
	})

	ns := e.namespace(t, "victim-dst")
	p := pod("victim-0", ns, ballastv1.ModeApply, "prop", "victim")
	p.Spec.Containers[0].Resources = res("100m", "", "128Mi", "")
	mustCreate(t, e.c, p)
	got := p.Spec.Containers[0].Resources
	if cpu := got.Requests.Cpu(); cpu.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("cpu request %s, want the node cap 4", cpu)
	}
	if mem := got.Requests.Memory(); mem.Cmp(resource.MustParse("16Gi")) > 0 {
		t.Errorf("memory request %s above the node's 16Gi", mem)
	}
	bounded := p.Annotations[ballastv1.BoundedAnnotation]
	if !strings.Contains(bounded, sizing.ReasonOutOfBounds+": above largest node allocatable 4") {
		t.Errorf("bounded annotation %q", bounded)
	}
	waitEvent(t, e, ns, p.Name, enrollment.EventRecommendationBounded, "above largest node allocatable 16Gi")
}
