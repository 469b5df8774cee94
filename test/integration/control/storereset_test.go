package control

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestStoreWiped: Valkey loses every key (FLUSHALL, as a restart without persistence does).
// The Sufficient profile keeps its recommendations, marked Stale (reason StoreReset), a new
// pod is still sized at admission from them, and once the history re-accrues in the store
// the condition is removed and the recommendations come from the store again.
func TestStoreWiped(t *testing.T) {
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
	const app, comp = "wiped", "api"

	seed := pod("seed", e.namespace(t, "wiped"), "measure", app, comp)
	mustCreate(t, e.c, seed)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	wp := e.profile(t, name, "profile created", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no hash yet")
		}
		return nil
	})
	hash := wp.Status.MeasurementHash
	accrue := func() {
		e.writeSamples(t, hash, "app", series.ResourceCPU, repeat(240, 13), 20*time.Second)
		e.writeSamples(t, hash, "app", series.ResourceMemory, repeat(192<<20, 13), 20*time.Second)
		e.clock.Step(time.Second)
		e.reconcile(t, name)
	}
	accrue()
	before := e.profile(t, name, "profile Sufficient", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		return nil
	})
	if got, err := v.Do("GET", series.StoreEpochKey); err != nil || got == "" {
		t.Fatalf("the store epoch was not written at first use: %q %v", got, err)
	}

	if _, err := v.Do("FLUSHALL"); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	e.reconcile(t, name)
	stale := e.profile(t, name, "profile marked Stale after the wipe", func(wp *ballastv1.WorkloadProfile) error {
		c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionStale)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ballastv1.ReasonStoreReset {
			return fmt.Errorf("Stale condition %+v", c)
		}
		return nil
	})
	if stale.Status.State != ballastv1.StateSufficient || !stale.Status.MeetsThreshold ||
		!equality.Semantic.DeepEqual(stale.Status.Containers, before.Status.Containers) {
		t.Errorf("the wipe lost the recommendations: state %q, containers %+v, want %+v",
			stale.Status.State, stale.Status.Containers, before.Status.Containers)
	}
	if got, err := v.Do("GET", series.StoreEpochKey); err != nil || got == "" {
		t.Errorf("a new store epoch was not written after the wipe: %q %v", got, err)
	}
	// Reconciling again while the store is still empty keeps it so.
	e.clock.Step(time.Minute)
	e.reconcile(t, name)
	e.profile(t, name, "still Stale while the store is empty", func(wp *ballastv1.WorkloadProfile) error {
		if !meta.IsStatusConditionTrue(wp.Status.Conditions, ballastv1.ConditionStale) || wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q conditions %+v", wp.Status.State, wp.Status.Conditions)
		}
		return nil
	})

	// A new pod is admitted sized from the kept recommendations.
	p := pod("web", e.namespace(t, "wiped-new"), "apply", app, comp)
	if err := e.c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if r := p.Spec.Containers[0].Resources; r.Requests.Cpu().String() != "300m" || r.Requests.Memory().String() != "192Mi" {
		t.Errorf("pod admitted after the wipe with %v, want the kept 300m/192Mi", r.Requests)
	}

	// The history re-accrues: the condition goes, the store backs the recommendations again.
	accrue()
	e.profile(t, name, "Stale cleared after re-accrual", func(wp *ballastv1.WorkloadProfile) error {
		if c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionStale); c != nil {
			return fmt.Errorf("Stale condition still %+v", c)
		}
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		if s := stat(wp, "app", "cpu"); s == nil || s.Samples != 13 {
			return fmt.Errorf("cpu stats %+v, want the 13 re-accrued samples", s)
		}
		return nil
	})
}
