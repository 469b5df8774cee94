package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/resize"
)

// testResizeInfeasible: a pods/resize above the node's allocatable is refused by the real
// API server's PodResizeValidator with 403 and cause NodeCapacity, and Ballast's reading of
// that answer (resize.ObserveError, what the controller records as resize-state Infeasible
// with ResizeInfeasible and outcome="infeasible") gives Infeasible for it. The pod's spec
// and generation stay.
//
// Ballast itself never sends such a resize on a consistent view: its planner caps every
// growth at what the node can hold (allocatable minus the other pods), which the hand-over
// step shows. The real answer is therefore produced here by the test's own patch; the
// controller's recording of it is covered by the unit tests with this exact status.
func testResizeInfeasible(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "infeasible")
	p := runningPod(t, ctx, loadPod("infeasible", "big", "infeasible", "measure", []string{"-cpu-millis", "10", "-memory-mib", "8"},
		res("20m", "32Mi"), res("", "64Mi")))
	defer func() { _ = n.Client.Delete(ctx, p) }()
	node := &corev1.Node{}
	if err := n.Client.Get(ctx, client.ObjectKey{Name: NodeName}, node); err != nil {
		t.Fatal(err)
	}
	alloc := node.Status.Allocatable.Cpu().MilliValue()
	want := alloc + 500
	body := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"%dm"}}}]}}`,
		p.ResourceVersion, want)
	gen := p.Generation
	err := n.Client.SubResource("resize").Patch(ctx, p.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, []byte(body)))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("resize to %dm on a node with %dm allocatable: %v, want 403 Forbidden", want, alloc, err)
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		t.Fatalf("no status details: %v", err)
	}
	causes := st.Status().Details.Causes
	if len(causes) == 0 || causes[0].Type != "NodeCapacity" {
		t.Errorf("causes %+v, want NodeCapacity", causes)
	}
	if msg := fmt.Sprintf("node didn't have enough allocatable resources: cpu, requested: %d, allocatable: %d", want, alloc); !strings.Contains(err.Error(), msg) {
		t.Errorf("message %q, want it to contain %q", err.Error(), msg)
	}
	obs, rerr := resize.ObserveError(err)
	if rerr != nil || obs == nil || obs.State != ballastv1.ResizeStateInfeasible {
		t.Errorf("resize.ObserveError(the real 403) = %+v, %v; want state Infeasible", obs, rerr)
	}
	if obs != nil {
		t.Logf("API server: %v (causes %+v) → Ballast state %s", err, causes, obs.State)
	}
	cur := &corev1.Pod{}
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
		t.Fatal(err)
	}
	if cur.Generation != gen || !equalResources(cur.Spec.Containers[0].Resources, p.Spec.Containers[0].Resources) {
		t.Errorf("refused resize changed the pod: generation %d → %d, resources %v", gen, cur.Generation, cur.Spec.Containers[0].Resources)
	}
}
