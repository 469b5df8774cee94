package sizing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
)

// TestLongRunningAndApplied: LongRunning addresses the native sidecar and the regular
// containers (never the run-to-completion init container), and Applied gives each addressed
// container exactly what WithChanges writes into it, request defaulting included, without
// modifying the pod.
func TestLongRunningAndApplied(t *testing.T) {
	p := pod(container("app").req("cpu", "500m").lim("memory", "512Mi"), container("log").req("cpu", "50m")).
		init(container("migrate").req("cpu", "2"), container("mesh").always().req("cpu", "100m")).obj()
	lr := LongRunning(p)
	var names []string
	for _, ch := range lr {
		names = append(names, ch.Name)
	}
	if diff := cmp.Diff([]string{"mesh", "app", "log"}, names); diff != "" {
		t.Fatalf("LongRunning (-want +got):\n%s", diff)
	}
	changes := []ContainerChanges{
		{Name: "mesh", Sidecar: true, Index: 1, Requests: rl("cpu", "200m")},
		{Name: "app", Index: 0, Limits: rl("memory", "768Mi")},
		{Name: "gone", Index: 7, Requests: rl("cpu", "1")},
	}
	before := p.DeepCopy()
	after := WithChanges(p, changes)
	for _, ch := range changes {
		got, ok := ch.Applied(p)
		want := ch.Container(after)
		if ok != (want != nil) {
			t.Fatalf("%s: ok %v, WithChanges has it: %v", ch.Name, ok, want != nil)
		}
		if ok && !equality.Semantic.DeepEqual(got, want.Resources) {
			t.Errorf("%s: Applied %v, WithChanges %v", ch.Name, got, want.Resources)
		}
	}
	if r, _ := changes[1].Applied(p); r.Requests.Memory().String() != "768Mi" {
		t.Errorf("app's memory request is not defaulted to its new limit: %v", r.Requests)
	}
	if !equality.Semantic.DeepEqual(before, p) {
		t.Error("Applied or WithChanges modified the pod")
	}
}
