package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestAdminMaxNodeMemoryCapsAdmission: every node reports 256Gi allocatable, but the
// BallastConfig's spec.bounds.maxNodeMemory is 128Mi: a pod admitted from a profile that
// recommends 192Mi gets 128Mi, and its bounded annotation names the BallastConfig bound.
// Without spec.bounds the cap would be the nodes' own 256Gi and the pod would get 192Mi.
func TestAdminMaxNodeMemoryCapsAdmission(t *testing.T) {
	v, err := harness.StartValkey()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	kube, err := harness.StartKube(harness.KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	e := startEnv(t, kube, v.URL())
	ctx := context.Background()
	e.makeNode(t, "huge-1", "64", "256Gi", 110, "linux")
	e.makeNode(t, "huge-2", "64", "256Gi", 110, "linux")
	e.sufficientProfile(t, "capped", 240, 192<<20)

	cfg := &ballastv1.BallastConfig{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: ballastv1.BallastConfigName}, cfg); err != nil {
		t.Fatal(err)
	}
	orig := cfg.DeepCopy()
	max := resource.MustParse("128Mi")
	cfg.Spec.Bounds = &ballastv1.NodeBounds{MaxNodeMemory: &max}
	if err := e.c.Patch(ctx, cfg, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}

	ns := e.namespace(t, "capped")
	i := 0
	eventually(t, 30*time.Second, "a pod admitted with memory capped at 128Mi", func() error {
		i++
		p := pod(fmt.Sprintf("web-%d", i), ns, "apply", "prop", "capped")
		if err := e.c.Create(ctx, p); err != nil {
			return err
		}
		r := p.Spec.Containers[0].Resources
		if got := r.Requests.Memory().String(); got != "128Mi" {
			return fmt.Errorf("memory request %s (limit %s), want 128Mi", got, r.Limits.Memory())
		}
		if l := r.Limits.Memory(); l.Cmp(max) > 0 {
			return fmt.Errorf("memory limit %s above 128Mi", l)
		}
		if ann := p.Annotations[ballastv1.BoundedAnnotation]; !strings.Contains(ann, "BallastConfig spec.bounds 128Mi") {
			return fmt.Errorf("bounded annotation %q does not name the BallastConfig bound", ann)
		}
		return nil
	})
}
