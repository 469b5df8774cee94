package sizing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

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
