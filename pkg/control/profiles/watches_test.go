package profiles

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestNotOwnStatusDropsOnlyTheControllersOwnWrites(t *testing.T) {
	base := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1, Finalizers: []string{ballastv1.ProfileFinalizer}},
		Status: ballastv1.WorkloadProfileStatus{MeasurementHash: "h1", TupleLabels: map[string]string{"a": "b"},
			PolicyRef: &ballastv1.PolicyRef{Kind: ballastv1.KindClusterResourcePolicy, Name: "default"}}}
	for _, tc := range []struct {
		name   string
		change func(*ballastv1.WorkloadProfile)
		want   bool // the update is reconciled
	}{
		{"statistics and counts", func(p *ballastv1.WorkloadProfile) {
			p.Status.ActivePods, p.Status.MeetsThreshold, p.Status.State = 2, true, "Sufficient"
			p.Status.Containers = []ballastv1.ContainerProfile{{Name: "c0"}}
		}, false},
		{"measurementHash", func(p *ballastv1.WorkloadProfile) { p.Status.MeasurementHash = "h2" }, true},
		{"policyRef", func(p *ballastv1.WorkloadProfile) { p.Status.PolicyRef = nil }, true},
		{"tupleLabels", func(p *ballastv1.WorkloadProfile) { p.Status.TupleLabels = map[string]string{"a": "c"} }, true},
		{"selectorLabels", func(p *ballastv1.WorkloadProfile) { p.Status.SelectorLabels = map[string]string{"x": "y"} }, true},
		{"deletion", func(p *ballastv1.WorkloadProfile) { p.DeletionTimestamp = &metav1.Time{} }, true},
		{"finalizers", func(p *ballastv1.WorkloadProfile) { p.Finalizers = nil }, true},
		{"annotations", func(p *ballastv1.WorkloadProfile) { p.Annotations = map[string]string{"k": "v"} }, true},
		{"generation", func(p *ballastv1.WorkloadProfile) { p.Generation = 2 }, true},
	} {
		next := base.DeepCopy()
		tc.change(next)
		if got := notOwnStatus.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: next}); got != tc.want {
			t.Errorf("%s: reconciled = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !notOwnStatus.Create(event.CreateEvent{Object: base}) || !notOwnStatus.Delete(event.DeleteEvent{Object: base}) {
		t.Error("creations and deletions are always reconciled")
	}
}
