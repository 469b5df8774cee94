package control

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/test/harness"
)

// podLevelResizeOutcome creates a running pod with pod-level spec.resources on a node of
// kube and sends pods/resize with the pod-level cpu request and memory limit changed (the
// container's own values changed to match). It returns the stored pod-level resources
// afterwards and the API server's error (nil when accepted).
func podLevelResizeOutcome(t *testing.T, kube *harness.Kube, node string, declared []string) (*corev1.ResourceRequirements, error) {
	t.Helper()
	ctx := context.Background()
	e := &env{kube: kube, c: kube.Client}
	e.makeNode(t, node, "8", "16Gi", 110, "linux")
	if declared != nil {
		n := &corev1.Node{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			t.Fatal(err)
		}
		n.Status.DeclaredFeatures = declared
		if err := e.c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	ns := e.namespace(t, "pl")
	p := boundPod("pl", ns, "", "pl", node, res2("1", "1Gi", "2Gi"))
	p.Spec.Resources = &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	mustCreate(t, e.c, p)
	key := types.NamespacedName{Namespace: ns, Name: "pl"}
	p = e.running(t, key)
	body := `{"spec":{"resources":{"requests":{"cpu":"500m","memory":"1Gi"},"limits":{"memory":"1536Mi"}},` +
		`"containers":[{"name":"app","resources":{"requests":{"cpu":"500m","memory":"1Gi"},"limits":{"memory":"1536Mi"}}}]}}`
	err := e.c.SubResource("resize").Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, []byte(body)))
	got := &corev1.Pod{}
	if gerr := e.c.Get(ctx, key, got); gerr != nil {
		t.Fatal(gerr)
	}
	return got.Spec.Resources, err
}

// TestPodLevelResizeAPI records what the 1.37.2 API server (default feature gates) does with
// an in-place resize of pod-level spec.resources: it checks the node's declared features
// (status.declaredFeatures), so a node whose kubelet does not declare
// InPlacePodLevelResourcesVerticalScaling gets a 403, and one that does gets the resize
// stored. docs/resize.md quotes both.
func TestPodLevelResizeAPI(t *testing.T) {
	kube, err := harness.StartKube(harness.KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	t.Run("node without the declared feature", func(t *testing.T) {
		pr, err := podLevelResizeOutcome(t, kube, "pl-plain", nil)
		t.Logf("pods/resize of spec.resources: err=%v, stored %v / %v", err, pr.Requests, pr.Limits)
		if err == nil || !strings.Contains(err.Error(), "InPlacePodLevelResourcesVerticalScaling which are not available on node") {
			t.Fatalf("want the declared-features refusal, got %v (stored %v)", err, pr)
		}
		if pr.Limits.Memory().String() != "2Gi" {
			t.Fatalf("refused resize changed the pod: %v", pr.Limits)
		}
	})
	t.Run("node declaring InPlacePodLevelResourcesVerticalScaling", func(t *testing.T) {
		pr, err := podLevelResizeOutcome(t, kube, "pl-declared", []string{"InPlacePodLevelResourcesVerticalScaling"})
		t.Logf("pods/resize of spec.resources: err=%v, stored %v / %v", err, pr.Requests, pr.Limits)
		if err != nil {
			t.Fatalf("rejected: %v", err)
		}
		if pr.Limits.Memory().String() != "1536Mi" || pr.Requests.Cpu().String() != "500m" {
			t.Fatalf("stored %v / %v", pr.Requests, pr.Limits)
		}
	})
}
