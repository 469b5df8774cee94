package sizing

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestQoS(t *testing.T) {
	cases := map[string]struct {
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		"no resources anywhere is BestEffort": {
			pod:  pod(container("app")).obj(),
			want: corev1.PodQOSBestEffort,
		},
		"only ephemeral-storage does not count: BestEffort": {
			pod:  pod(container("app").req("ephemeral-storage", "1Gi").lim("ephemeral-storage", "2Gi")).obj(),
			want: corev1.PodQOSBestEffort,
		},
		"zero quantities are ignored: BestEffort": {
			pod:  pod(container("app").req("cpu", "0", "memory", "0").lim("cpu", "0")).obj(),
			want: corev1.PodQOSBestEffort,
		},
		"a cpu request alone is Burstable": {
			pod:  pod(container("app").req("cpu", "100m")).obj(),
			want: corev1.PodQOSBurstable,
		},
		"cpu and memory requests equal limits is Guaranteed": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi")).obj(),
			want: corev1.PodQOSGuaranteed,
		},
		"equal by value in different notation is Guaranteed": {
			pod:  pod(container("app").req("cpu", "1", "memory", "128Mi").lim("cpu", "1000m", "memory", "134217728")).obj(),
			want: corev1.PodQOSGuaranteed,
		},
		"a request one unit below its limit is Burstable": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "134217727").lim("cpu", "100m", "memory", "128Mi")).obj(),
			want: corev1.PodQOSBurstable,
		},
		"missing memory limit is Burstable": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m")).obj(),
			want: corev1.PodQOSBurstable,
		},
		"limits without requests are compared as written: Burstable": {
			pod:  pod(container("app").lim("cpu", "100m", "memory", "128Mi")).obj(),
			want: corev1.PodQOSBurstable,
		},
		"a zero limit counts as no limit: Burstable": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "0")).obj(),
			want: corev1.PodQOSBurstable,
		},
		"one Guaranteed and one empty container is Burstable": {
			pod: pod(
				container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi"),
				container("log"),
			).obj(),
			want: corev1.PodQOSBurstable,
		},
		"a run-to-completion init container without limits makes it Burstable": {
			pod: pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi")).
				init(container("migrate")).obj(),
			want: corev1.PodQOSBurstable,
		},
		"init containers and sidecars all Guaranteed is Guaranteed": {
			pod: pod(container("app").req("cpu", "1", "memory", "1Gi").lim("cpu", "1", "memory", "1Gi")).
				init(container("migrate").req("cpu", "50m", "memory", "64Mi").lim("cpu", "50m", "memory", "64Mi"),
					container("proxy").always().req("cpu", "10m", "memory", "32Mi").lim("cpu", "10m", "memory", "32Mi")).obj(),
			want: corev1.PodQOSGuaranteed,
		},
		"ephemeral containers do not count": {
			pod:  pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi")).ephemeral("debug").obj(),
			want: corev1.PodQOSGuaranteed,
		},
		"per container, not summed: mismatched containers with equal sums are Burstable": {
			pod: pod(
				container("a").req("cpu", "100m", "memory", "100Mi").lim("cpu", "200m", "memory", "100Mi"),
				container("b").req("cpu", "200m", "memory", "100Mi").lim("cpu", "100m", "memory", "100Mi"),
			).obj(),
			want: corev1.PodQOSBurstable,
		},
		"pod-level resources decide: Guaranteed over Burstable containers": {
			pod: pod(container("app").req("cpu", "100m")).podLevel(corev1.ResourceRequirements{
				Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi"),
			}).obj(),
			want: corev1.PodQOSGuaranteed,
		},
		"pod-level resources decide: Burstable over Guaranteed containers": {
			pod: pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi")).
				podLevel(corev1.ResourceRequirements{Requests: rl("cpu", "500m")}).obj(),
			want: corev1.PodQOSBurstable,
		},
		"pod-level resources without cpu or memory are not set: containers decide": {
			pod: pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi")).
				podLevel(corev1.ResourceRequirements{Requests: rl("ephemeral-storage", "1Gi")}).obj(),
			want: corev1.PodQOSGuaranteed,
		},
		"no containers at all is BestEffort": {
			pod:  pod().obj(),
			want: corev1.PodQOSBestEffort,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := QoS(tc.pod); got != tc.want {
				t.Errorf("QoS = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestQoSOfAppliesRequestDefaulting(t *testing.T) {
	// A limit written where there is no request: the API server defaults the request to
	// the limit, which can make the pod Guaranteed.
	p := pod(container("app").req("cpu", "100m").lim("cpu", "100m")).obj()
	ch := []ContainerChanges{{Name: "app", Limits: rl("memory", "128Mi")}}
	if got := QoSWith(p, ch); got != corev1.PodQOSGuaranteed {
		t.Errorf("QoSWith with defaulting = %s, want Guaranteed", got)
	}
	if got := QoS(p); got != corev1.PodQOSBurstable {
		t.Errorf("QoS of the original = %s, want Burstable", got)
	}
}
