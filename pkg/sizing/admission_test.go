package sizing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// ann builds Ballast annotations from short-name/value pairs ("applied-cpu-request", "200m").
func ann(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[v1.Prefix+kv[i]] = kv[i+1]
	}
	return m
}

func clamp(container, res, recommended, limit, written string) Clamp {
	r := corev1.ResourceName(res)
	return Clamp{Container: container, Resource: r,
		Recommended: u(r, recommended), Limit: u(r, limit), Written: u(r, written)}
}

func app(requests, limits corev1.ResourceList) ContainerChanges {
	return ContainerChanges{Name: "app", Requests: requests, Limits: limits}
}

// TestAdmission holds the acceptance vectors of SPEC §7.6 (the "§7.6" cases) and the
// rules of §7.3–§7.5 around them.
func TestAdmission(t *testing.T) {
	cases := map[string]struct {
		pod     *corev1.Pod
		recs    Recommendations
		managed Managed
		want    Result
	}{
		"§7.6 memory 100Mi/128Mi without a cpu limit: the request clamps to 128Mi and the pod stays Burstable": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "100Mi").lim("memory", "128Mi")).obj(),
			recs: Recommendations{"app": {"memory": rec("memory", "152508Ki", "")}},
			want: Result{
				Changes:     []ContainerChanges{app(rl("memory", "128Mi"), nil)},
				Annotations: ann("applied-memory-request", "128Mi", "clamped-memory-request", "152508Ki"),
				Clamps:      []Clamp{clamp("app", "memory", "152508Ki", "128Mi", "128Mi")},
			},
		},
		"§7.6 cpu 100m/200m with a 500m recommendation: the request clamps to the limit": {
			pod:  pod(container("app").req("cpu", "100m").lim("cpu", "200m")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "500m", "")}},
			want: Result{
				Changes:     []ContainerChanges{app(rl("cpu", "200m"), nil)},
				Annotations: ann("applied-cpu-request", "200m", "clamped-cpu-request", "500m"),
				Clamps:      []Clamp{clamp("app", "cpu", "500m", "200m", "200m")},
			},
		},
		"§7.6 cpu 100m/200m with request 500m and limit 300m: the recommended limit is the bound": {
			pod:     pod(container("app").req("cpu", "100m").lim("cpu", "200m")).obj(),
			recs:    Recommendations{"app": {"cpu": rec("cpu", "500m", "300m")}},
			managed: allManaged(),
			want: Result{
				Changes:     []ContainerChanges{app(rl("cpu", "300m"), rl("cpu", "300m"))},
				Annotations: ann("applied-cpu-limit", "300m", "applied-cpu-request", "300m", "clamped-cpu-request", "500m"),
				Clamps:      []Clamp{clamp("app", "cpu", "500m", "300m", "300m")},
			},
		},
		"§7.6 cpu 100m without a limit: 500m is written, nothing to clamp against": {
			pod:  pod(container("app").req("cpu", "100m")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "500m", "")}},
			want: Result{
				Changes:     []ContainerChanges{app(rl("cpu", "500m"), nil)},
				Annotations: ann("applied-cpu-request", "500m"),
			},
		},
		"§7.6 a clamp that would make the pod Guaranteed steps memory one byte down; ephemeral-storage clamps exactly": {
			pod: pod(container("app").
				req("cpu", "100m", "memory", "100Mi", "ephemeral-storage", "500Mi").
				lim("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1Gi")).obj(),
			recs: Recommendations{"app": {"memory": rec("memory", "149Mi", ""), "ephemeral-storage": rec("ephemeral-storage", "2Gi", "")}},
			want: Result{
				Changes: []ContainerChanges{app(rl("memory", "134217727", "ephemeral-storage", "1Gi"), nil)},
				Annotations: ann(
					"applied-memory-request", "134217727", "clamped-memory-request", "149Mi",
					"applied-ephemeral-storage-request", "1Gi", "clamped-ephemeral-storage-request", "2Gi"),
				Clamps: []Clamp{
					clamp("app", "memory", "149Mi", "128Mi", "134217727"),
					clamp("app", "ephemeral-storage", "2Gi", "1Gi", "1Gi"),
				},
			},
		},
		"§7.6 a Guaranteed pod clamps exactly to its unchanged limit: no patch, but the clamp is counted": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi")).obj(),
			recs: Recommendations{"app": {"memory": rec("memory", "149Mi", "")}},
			want: Result{
				Clamps:     []Clamp{clamp("app", "memory", "149Mi", "128Mi", "128Mi")},
				SkipReason: ReasonNoChange,
			},
		},
		"§7.6 a Guaranteed container whose cpu request would drop is pinned with all its changes": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "50m", ""), "ephemeral-storage": rec("ephemeral-storage", "1Gi", "")}},
			want: Result{Pinned: []string{"app"}, SkipReason: ReasonQoSPinned},
		},
		"§7.6 a recommendation landing exactly on the limit steps cpu down to 199m": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "200m", "memory", "128Mi")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "200m", "")}},
			want: Result{
				Changes:     []ContainerChanges{app(rl("cpu", "199m"), nil)},
				Annotations: ann("applied-cpu-request", "199m"),
			},
		},
		"§7.6 a limit-only recommendation below the author's request holds the request at the new limit": {
			pod:  pod(container("app").req("memory", "200Mi").lim("memory", "256Mi")).obj(),
			recs: Recommendations{"app": {"memory": rec("memory", "", "150Mi")}},
			want: Result{
				Changes:     []ContainerChanges{app(rl("memory", "150Mi"), rl("memory", "150Mi"))},
				Annotations: ann("applied-memory-limit", "150Mi", "applied-memory-request", "150Mi", "clamped-memory-request", "200Mi"),
				Clamps:      []Clamp{clamp("app", "memory", "200Mi", "150Mi", "150Mi")},
			},
		},
		"a policy managing only the memory limit holds the author's request the same way": {
			pod:     pod(container("app").req("memory", "200Mi").lim("memory", "256Mi")).obj(),
			recs:    Recommendations{"app": {"memory": rec("memory", "180Mi", "150Mi")}},
			managed: Managed{{corev1.ResourceMemory, Limit}: true},
			want: Result{
				Changes:     []ContainerChanges{app(rl("memory", "150Mi"), rl("memory", "150Mi"))},
				Annotations: ann("applied-memory-limit", "150Mi", "applied-memory-request", "150Mi", "clamped-memory-request", "200Mi"),
				Clamps:      []Clamp{clamp("app", "memory", "200Mi", "150Mi", "150Mi")},
			},
		},
		"a held request that would make the pod Guaranteed steps down too": {
			pod:     pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "200m", "memory", "128Mi")).obj(),
			recs:    Recommendations{"app": {"cpu": rec("cpu", "", "50m")}},
			managed: Managed{{corev1.ResourceCPU, Limit}: true},
			want: Result{
				Changes:     []ContainerChanges{app(rl("cpu", "49m"), rl("cpu", "50m"))},
				Annotations: ann("applied-cpu-limit", "50m", "applied-cpu-request", "49m", "clamped-cpu-request", "100m"),
				Clamps:      []Clamp{clamp("app", "cpu", "100m", "50m", "49m")},
			},
		},
		"a cpu limit of 1 steps a clamped request down to 999m": {
			pod:  pod(container("app").req("cpu", "500m", "memory", "128Mi").lim("cpu", "1", "memory", "128Mi")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "2", "")}},
			want: Result{
				Changes:     []ContainerChanges{app(rl("cpu", "999m"), nil)},
				Annotations: ann("applied-cpu-request", "999m", "clamped-cpu-request", "2"),
				Clamps:      []Clamp{clamp("app", "cpu", "2", "1", "999m")},
			},
		},
		"a managed limit without a recommendation keeps the existing limit as the bound and never raises it": {
			pod:     pod(container("app").req("cpu", "100m").lim("cpu", "200m")).obj(),
			recs:    Recommendations{"app": {"cpu": rec("cpu", "500m", "")}},
			managed: allManaged(),
			want: Result{
				Changes:     []ContainerChanges{app(rl("cpu", "200m"), nil)},
				Annotations: ann("applied-cpu-request", "200m", "clamped-cpu-request", "500m"),
				Clamps:      []Clamp{clamp("app", "cpu", "500m", "200m", "200m")},
			},
		},
		"a recommendation for a field the policy does not manage is ignored": {
			pod:  pod(container("app").req("cpu", "100m")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "", "300m")}},
			want: Result{SkipReason: ReasonNoChange},
		},
		"an equal value in another notation is not written": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "128Mi")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "0.1", ""), "memory": rec("memory", "134217728", "")}},
			want: Result{SkipReason: ReasonNoChange},
		},
		"a container without recommendations and an unknown container are left alone": {
			pod:  pod(container("app").req("cpu", "100m")).obj(),
			recs: Recommendations{"other": {"cpu": rec("cpu", "500m", "")}},
			want: Result{SkipReason: ReasonNoChange},
		},
		"a BestEffort pod carries no class intent and may become Guaranteed": {
			pod:     pod(container("app")).obj(),
			recs:    Recommendations{"app": {"cpu": rec("cpu", "100m", "100m"), "memory": rec("memory", "128Mi", "128Mi")}},
			managed: allManaged(),
			want: Result{
				Changes: []ContainerChanges{app(rl("cpu", "100m", "memory", "128Mi"), rl("cpu", "100m", "memory", "128Mi"))},
				Annotations: ann("applied-cpu-limit", "100m", "applied-cpu-request", "100m",
					"applied-memory-limit", "128Mi", "applied-memory-request", "128Mi"),
			},
		},
		"sidecars are processed before regular containers and the last written annotation wins": {
			pod: pod(container("app").req("cpu", "100m")).
				init(container("migrate").req("cpu", "1"), container("proxy").always().req("cpu", "10m")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "300m", "")}, "proxy": {"cpu": rec("cpu", "20m", "")}, "migrate": {"cpu": rec("cpu", "50m", "")}},
			want: Result{
				Changes: []ContainerChanges{
					{Name: "proxy", Sidecar: true, Index: 1, Requests: rl("cpu", "20m")},
					app(rl("cpu", "300m"), nil),
				},
				Annotations: ann("applied-cpu-request", "300m"),
			},
		},
		"an unclamped later write removes the earlier container's clamped annotation": {
			pod: pod(container("app").req("cpu", "100m")).
				init(container("proxy").always().req("cpu", "10m").lim("cpu", "20m")).obj(),
			recs: Recommendations{"app": {"cpu": rec("cpu", "300m", "")}, "proxy": {"cpu": rec("cpu", "50m", "")}},
			want: Result{
				Changes: []ContainerChanges{
					{Name: "proxy", Sidecar: true, Index: 0, Requests: rl("cpu", "20m")},
					app(rl("cpu", "300m"), nil),
				},
				Annotations: ann("applied-cpu-request", "300m"),
				Clamps:      []Clamp{clamp("proxy", "cpu", "50m", "20m", "20m")},
			},
		},
		"run-to-completion init containers and ephemeral containers are never touched": {
			pod:  pod(container("app")).init(container("migrate").req("cpu", "1")).ephemeral("debug").obj(),
			recs: Recommendations{"migrate": {"cpu": rec("cpu", "50m", "")}, "debug": {"cpu": rec("cpu", "50m", "")}},
			want: Result{SkipReason: ReasonNoChange},
		},
		"only the container that would change the class is pinned; the other is patched": {
			pod: pod(
				container("a").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi"),
				container("b").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi"),
			).obj(),
			recs:    Recommendations{"a": {"cpu": rec("cpu", "50m", "")}, "b": {"cpu": rec("cpu", "200m", "200m")}},
			managed: allManaged(),
			want: Result{
				Changes:     []ContainerChanges{{Name: "b", Index: 1, Requests: rl("cpu", "200m"), Limits: rl("cpu", "200m")}},
				Annotations: ann("applied-cpu-limit", "200m", "applied-cpu-request", "200m"),
				Pinned:      []string{"a"},
			},
		},
		"changes harmless alone but together turning the pod Guaranteed leave the whole pod unpatched": {
			pod: pod(
				container("a").req("cpu", "100m", "memory", "100Mi").lim("cpu", "100m", "memory", "128Mi"),
				container("b").req("cpu", "100m", "memory", "100Mi").lim("cpu", "100m", "memory", "128Mi"),
			).obj(),
			recs:    Recommendations{"a": {"memory": rec("memory", "", "100Mi")}, "b": {"memory": rec("memory", "", "100Mi")}},
			managed: Managed{{corev1.ResourceMemory, Limit}: true},
			want:    Result{Pinned: []string{"a", "b"}, SkipReason: ReasonQoSPinned},
		},
		"a new limit without a request would be defaulted into a Guaranteed pod: pinned": {
			pod:     pod(container("app").req("cpu", "100m").lim("cpu", "100m")).obj(),
			recs:    Recommendations{"app": {"memory": rec("memory", "", "128Mi")}},
			managed: defaultManaged(),
			want:    Result{Pinned: []string{"app"}, SkipReason: ReasonQoSPinned},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			managed := tc.managed
			if managed == nil {
				managed = defaultManaged()
			}
			before := tc.pod.DeepCopy()
			got := Admission(tc.pod, tc.recs, Params{Managed: managed})
			if diff := cmp.Diff(tc.want, got, cmpOpts...); diff != "" {
				t.Errorf("Admission (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.pod, cmpOpts...); diff != "" {
				t.Errorf("Admission modified its input pod (-before +after):\n%s", diff)
			}
		})
	}
}
