package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// testResizeBudget: the disruption budget on the real node (docs/resize.md "Disruption
// budget"). A drifted load pod whose memory resize restarts its container
// (resizePolicy RestartContainer) and that a PodDisruptionBudget with maxUnavailable 0
// covers is relabelled to resize: Ballast holds the resize (ResizeHeld budget, pass after
// pass) and the kubelet sees no change and no restart. The PDB is deleted: the next pass
// sends the resize and the real kubelet actuates it by restarting the container.
func testResizeBudget(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "budget")
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "budget"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/component": "worker"}}}}
	if err := n.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	pod := loadPod("budget", "held", "worker", "measure",
		[]string{"-cpu-millis", fmt.Sprint(loadMilliCPU), "-memory-mib", fmt.Sprint(loadMiB)},
		res("600m", "400Mi"), res("", "512Mi"))
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	p := runningPod(t, ctx, pod)
	restarts := p.Status.ContainerStatuses[0].RestartCount
	gen := p.Generation
	patch := []byte(`{"metadata":{"labels":{"` + modeLabel + `":"resize"}}}`)
	if err := n.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	held := func() int {
		c := 0
		for _, e := range podEvents(t, ctx, p) {
			if strings.HasPrefix(e, "ResizeHeld budget: ") {
				c++
			}
		}
		return c
	}
	harness.Eventually(t, 60*time.Second, "ResizeHeld budget on the pod", func() error {
		if held() == 0 {
			return fmt.Errorf("events %v", podEvents(t, ctx, p))
		}
		return nil
	})
	// Three more intervals (5 s each): still nothing sent, nothing restarted.
	time.Sleep(15 * time.Second)
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	if p.Generation != gen || p.Annotations[ballastv1.ResizeStateAnnotation] != "" || p.Status.ContainerStatuses[0].RestartCount != restarts {
		t.Fatalf("held pod changed: generation %d → %d, resize-state %q, restarts %d → %d",
			gen, p.Generation, p.Annotations[ballastv1.ResizeStateAnnotation], restarts, p.Status.ContainerStatuses[0].RestartCount)
	}
	heldCount := controlCounter(t, ctx, "ballast_resize_held_total", `reason="budget"`)
	t.Logf("held by the PDB for 15 s: %v ResizeHeld budget held counter (sum over replicas), pod generation %d, restarts %d", heldCount, p.Generation, restarts)
	if heldCount < 2 {
		t.Errorf("ballast_resize_held_total{reason=budget} = %v, want ≥ 2 (one per pass)", heldCount)
	}

	// Without the PDB the resize is sent, and the kubelet restarts the container to apply it.
	deleted := time.Now()
	if err := n.Client.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 90*time.Second, "resized with a container restart", func() error {
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		cs := p.Status.ContainerStatuses[0]
		if p.Generation == gen || cs.RestartCount <= restarts || p.Annotations[ballastv1.ResizeStateAnnotation] != ballastv1.ResizeStateCompleted {
			return fmt.Errorf("generation %d, restarts %d, resize-state %q", p.Generation, cs.RestartCount, p.Annotations[ballastv1.ResizeStateAnnotation])
		}
		return nil
	})
	// The restart's NotReady is the resize working, not the pod failing under the smaller
	// size: no raise-back.
	time.Sleep(5 * time.Second)
	for _, e := range podEvents(t, ctx, p) {
		if strings.HasPrefix(e, "ResizeReverted ") {
			t.Errorf("the restarting shrink was raised back: %s", e)
		}
	}
	t.Logf("PDB deleted → resized and restarted (restarts %d → %d) in %s; memory limit %s",
		restarts, p.Status.ContainerStatuses[0].RestartCount, time.Since(deleted).Round(100*time.Millisecond),
		p.Spec.Containers[0].Resources.Limits.Memory().String())
	if err := n.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
}
