package control

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// misspelledSourceSuite: a higher-priority ClusterResourcePolicy whose metrics name a
// MetricsSource that does not exist is Valid=False (UnknownMetricsSource) and moves no pod:
// existing pods keep their profile, new pods join it, and nothing is orphaned.
func misspelledSourceSuite(t *testing.T, e *env) {
	ctx := context.Background()
	ns := e.namespace(t, "typo")
	first := pod("cart", ns, "measure", "typo", "cart")
	mustCreate(t, e.c, first)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
		t.Fatal(err)
	}
	home := first.Annotations[ballastv1.ProfileRefAnnotation]
	if first.Annotations[ballastv1.PolicyRefAnnotation] != "default" || home == "" {
		t.Fatalf("pod bound to %q under %q, want a profile of default", home, first.Annotations[ballastv1.PolicyRefAnnotation])
	}

	spec := fastPolicy()
	spec.Priority = 5
	for i := range spec.Metrics {
		spec.Metrics[i].Source = "does-not-exist"
	}
	crp := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "typo"}, Spec: spec}
	mustCreate(t, e.c, crp)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), crp) })
	eventually(t, 30*time.Second, "misspelled-source policy is Valid=False UnknownMetricsSource", func() error {
		if err := e.c.Get(ctx, client.ObjectKey{Name: crp.Name}, crp); err != nil {
			return err
		}
		c := meta.FindStatusCondition(crp.Status.Conditions, ballastv1.ConditionValid)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != policy.ReasonUnknownMetricsSource {
			return fmt.Errorf("Valid condition %+v", c)
		}
		return nil
	})

	// A new pod of the same workload identity joins the existing profile.
	second := pod("cart-2", ns, "measure", "typo", "cart")
	mustCreate(t, e.c, second)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
		t.Fatal(err)
	}
	if got := second.Annotations[ballastv1.ProfileRefAnnotation]; got != home {
		t.Errorf("new pod bound to %q, want the existing %q", got, home)
	}
	if got := second.Annotations[ballastv1.PolicyRefAnnotation]; got != "default" {
		t.Errorf("new pod governed by %q, want default", got)
	}
	// The old pod stays, and its profile keeps both pods and is not orphaned.
	e.reconcile(t, home)
	e.profile(t, home, "existing profile keeps its pods", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.ActivePods != 2 || meta.IsStatusConditionTrue(wp.Status.Conditions, ballastv1.ConditionOrphaned) {
			return fmt.Errorf("activePods=%d conditions=%v", wp.Status.ActivePods, wp.Status.Conditions)
		}
		return nil
	})
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
		t.Fatal(err)
	}
	if got := first.Annotations[ballastv1.ProfileRefAnnotation]; got != home {
		t.Errorf("existing pod moved to %q", got)
	}
	list := &ballastv1.WorkloadProfileList{}
	if err := e.c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for _, wp := range list.Items {
		if wp.Status.PolicyRef != nil && wp.Status.PolicyRef.Name == crp.Name {
			t.Errorf("profile %s was created under the invalid policy", wp.Name)
		}
	}
}
