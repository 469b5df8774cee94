package sizing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// TestLongRunningAndApplied: LongRunningChanges addresses the native sidecar and the regular
// containers (never the run-to-completion init container), and Applied gives each addressed
// container exactly what WithChanges writes into it, request defaulting included, without
// modifying the pod.
func TestLongRunningAndApplied(t *testing.T) {
	p := pod(container("app").req("cpu", "500m").lim("memory", "512Mi"), container("log").req("cpu", "50m")).
		init(container("migrate").req("cpu", "2"), container("mesh").always().req("cpu", "100m")).obj()
	lr := LongRunningChanges(p)
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

// TestLongRunning: native sidecars (restartPolicy Always) then regular containers, each in
// spec order with its index in its own list; run-to-completion init containers (no
// restartPolicy, or one other than Always) and ephemeral containers are never listed.
func TestLongRunning(t *testing.T) {
	always, never := corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicy("Never")
	cases := map[string]struct {
		spec corev1.PodSpec
		want []ContainerRef
	}{
		"regular containers only": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "proxy"}}},
			want: []ContainerRef{{Name: "app"}, {Name: "proxy", Index: 1}},
		},
		"sidecars first, at their init index; init containers skipped": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "migrate"}, {Name: "mesh", RestartPolicy: &always},
					{Name: "other", RestartPolicy: &never}, {Name: "log", RestartPolicy: &always}},
				Containers:          []corev1.Container{{Name: "app"}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
			},
			want: []ContainerRef{{Name: "mesh", Sidecar: true, Index: 1}, {Name: "log", Sidecar: true, Index: 3}, {Name: "app"}},
		},
		"an empty spec": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := LongRunning(&tc.spec)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LongRunning (-want +got):\n%s", diff)
			}
			for _, r := range got {
				c := r.Container(&tc.spec)
				if c == nil || c.Name != r.Name {
					t.Errorf("%+v does not point at its container: %v", r, c)
				}
				if ch := r.Changes(); ch.Name != r.Name || ch.Sidecar != r.Sidecar || ch.Index != r.Index {
					t.Errorf("Changes() = %+v, want the address of %+v", ch, r)
				}
			}
		})
	}
}

// TestContainerRefOfAnotherSpec: a ref whose index or name does not fit the spec points at
// nothing (a pod changed between listing and use).
func TestContainerRefOfAnotherSpec(t *testing.T) {
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}
	for _, r := range []ContainerRef{{Name: "app", Index: 1}, {Name: "web"}, {Name: "app", Sidecar: true}, {Name: "app", Index: -1}} {
		if c := r.Container(spec); c != nil {
			t.Errorf("%+v points at %q", r, c.Name)
		}
	}
}
