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
	"github.com/ballastk8s/ballast/pkg/series"
)

// blankFloorSuite is the regression of issue 9: a ClusterResourcePolicy with
// readiness.cvMeanFloor {cpu: ""} (the CRD schema admits it) used to show Valid=True while
// every profile under it became PolicyInvalid with no statistics. A blank value is not an
// error (SPEC §3.3); the blank entry is a missing one (no cpu floor, §4.3), so the policy
// is valid and its profiles compute.
func blankFloorSuite(t *testing.T, e *env) {
	ctx := context.Background()
	ns := e.namespace(t, "blankfloor")
	spec := fastPolicy()
	spec.Priority = 100
	spec.Selector.Namespaces.Include = []string{ns}
	spec.Readiness.CVMeanFloor = map[string]string{"cpu": ""}
	crp := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "blank-floor"}, Spec: spec}
	mustCreate(t, e.c, crp)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), crp) })

	// The API server stores the blank entry as written.
	stored := &ballastv1.ClusterResourcePolicy{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: crp.Name}, stored); err != nil {
		t.Fatal(err)
	}
	if v, ok := stored.Spec.Readiness.CVMeanFloor["cpu"]; !ok || v != "" {
		t.Fatalf("stored cvMeanFloor = %#v, want {cpu: \"\"}", stored.Spec.Readiness.CVMeanFloor)
	}
	eventually(t, 30*time.Second, "policy reports Valid=True", func() error {
		if err := e.c.Get(ctx, client.ObjectKey{Name: crp.Name}, stored); err != nil {
			return err
		}
		c := meta.FindStatusCondition(stored.Status.Conditions, ballastv1.ConditionValid)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != stored.Generation {
			return fmt.Errorf("Valid condition %+v", c)
		}
		return nil
	})

	// A pod governed by the policy gets a profile under it.
	p := pod("web", ns, "measure", "blankfloor", "web")
	mustCreate(t, e.c, p)
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: p.Name}, p); err != nil {
		t.Fatal(err)
	}
	if got := p.Annotations[ballastv1.PolicyRefAnnotation]; got != crp.Name {
		t.Fatalf("policy-ref = %q, want %q", got, crp.Name)
	}
	name := p.Annotations[ballastv1.ProfileRefAnnotation]
	wp := e.profile(t, name, "profile bound to the blank-floor policy", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" || wp.Status.PolicyRef == nil || wp.Status.PolicyRef.Name != crp.Name {
			return fmt.Errorf("hash %q policyRef %+v", wp.Status.MeasurementHash, wp.Status.PolicyRef)
		}
		return nil
	})

	// Three minutes of steady samples: enough for the fast preset (12 samples, 2m).
	e.writeSamples(t, wp.Status.MeasurementHash, "app", series.ResourceCPU, repeat(240, 13), 15*time.Second)
	e.writeSamples(t, wp.Status.MeasurementHash, "app", series.ResourceMemory, repeat(192<<20, 13), 15*time.Second)
	e.reconcile(t, name)
	wp = e.profile(t, name, "profile under the blank-floor policy computes", func(wp *ballastv1.WorkloadProfile) error {
		if c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionReady); c != nil && c.Reason == ballastv1.ReasonPolicyInvalid {
			return fmt.Errorf("Valid=True policy, yet the profile is %s: %s", c.Reason, c.Message)
		}
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q, stats %+v", wp.Status.State, stat(wp, "app", "cpu"))
		}
		return nil
	})
	if s := stat(wp, "app", "cpu"); s == nil || s.Samples != 13 || s.Mean != "240m" {
		t.Errorf("cpu stats = %+v, want 13 samples with mean 240m", s)
	}
	if recs := wp.Status.Containers[0].Recommendations; recs["cpu"].Request != "300m" || recs["memory"].Request != "192Mi" {
		t.Errorf("recommendations = %+v, want cpu 300m and memory 192Mi", recs)
	}
	if c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionReady); c == nil || c.Reason != ballastv1.ReasonSamplesCollected {
		t.Errorf("Ready condition = %+v, want SamplesCollected", c)
	}
}
