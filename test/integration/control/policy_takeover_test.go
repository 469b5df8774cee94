package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/policies"
	"github.com/ballastk8s/ballast/pkg/series"
)

// takeOverSuite: a policy created over pods whose profile already holds history (issue
// 13) moves them to a new profile under its own discriminator. The history stays behind
// in the old profile, and the policy says so — a ProfilesTakenOver condition with the
// count, a Warning event and a gauge — instead of dropping it silently.
func takeOverSuite(t *testing.T, e *env) {
	ctx := context.Background()
	ns := e.namespace(t, "takeover")
	p := pod("web", ns, "measure", "takeover", "web")
	mustCreate(t, e.c, p)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	old := p.Annotations[ballastv1.ProfileRefAnnotation]
	wp := e.profile(t, old, "profile under the default policy", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no measurement hash yet")
		}
		return nil
	})
	e.writeSamples(t, wp.Status.MeasurementHash, "app", series.ResourceCPU, repeat(200, 13), 15*time.Second)
	e.reconcile(t, old)
	e.profile(t, old, "old profile holds history", func(wp *ballastv1.WorkloadProfile) error {
		if s := stat(wp, "app", "cpu"); s == nil || s.Samples == 0 {
			return fmt.Errorf("cpu stats %+v", s)
		}
		return nil
	})

	spec := fastPolicy()
	spec.Priority = 100
	spec.Selector.Namespaces.Include = []string{ns}
	crp := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "takeover"}, Spec: spec}
	mustCreate(t, e.c, crp)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), crp) })

	got := &ballastv1.ClusterResourcePolicy{}
	eventually(t, 30*time.Second, "policy reports the profile it takes over", func() error {
		if err := e.c.Get(ctx, client.ObjectKey{Name: crp.Name}, got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, policies.ConditionProfilesTakenOver)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	c := meta.FindStatusCondition(got.Status.Conditions, policies.ConditionProfilesTakenOver)
	if c.Reason != policies.ReasonTakesOverProfiles || !strings.Contains(c.Message, "takes over 1 existing profile") ||
		!strings.Contains(c.Message, old) {
		t.Errorf("condition = %+v, want the count 1 and the name %s", c, old)
	}
	if ev := waitEvent(t, e, "", crp.Name, policies.ReasonTakesOverProfiles, "takes over 1 existing profile"); ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type %s, want Warning", ev.Type)
	}
	gauge := -1.0
	for _, m := range e.gather(t)["ballast_policy_profiles_taken_over"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == crp.Name {
				gauge = m.GetGauge().GetValue()
			}
		}
	}
	if gauge != 1 {
		t.Errorf("ballast_policy_profiles_taken_over{name=%q} = %v, want 1", crp.Name, gauge)
	}

	// The old profile keeps its history; the default policy, which still governs it, does
	// not report it (it may report other suites' profiles: a deleted policy's pods move to
	// the default policy, which is a take-over too).
	e.profile(t, old, "old profile keeps its samples", func(wp *ballastv1.WorkloadProfile) error {
		if s := stat(wp, "app", "cpu"); s == nil || s.Samples != 13 {
			return fmt.Errorf("cpu stats %+v", s)
		}
		return nil
	})
	def := &ballastv1.ClusterResourcePolicy{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: "default"}, def); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(def.Status.Conditions, policies.ConditionProfilesTakenOver); c != nil && strings.Contains(c.Message, old) {
		t.Errorf("default policy reports taking over its own profile %s: %+v", old, c)
	}
}
