package discovery

import (
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// podBuilder builds test pods.
type podBuilder struct{ p *corev1.Pod }

func pod(name string) *podBuilder {
	return &podBuilder{p: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-" + "0001",
		Labels: map[string]string{ballastv1.ModeLabel: ballastv1.ModeMeasure}, Annotations: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable}}}
}

func (b *podBuilder) container(name, id string) *podBuilder {
	b.p.Spec.Containers = append(b.p.Spec.Containers, corev1.Container{Name: name})
	b.p.Status.ContainerStatuses = append(b.p.Status.ContainerStatuses, running(name, id))
	return b
}

func (b *podBuilder) sidecar(name, id string) *podBuilder {
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{Name: name,
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)})
	b.p.Status.InitContainerStatuses = append(b.p.Status.InitContainerStatuses, running(name, id))
	return b
}

func (b *podBuilder) initContainer(name, id string) *podBuilder {
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{Name: name})
	b.p.Status.InitContainerStatuses = append(b.p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: name,
		ContainerID: id, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}})
	return b
}

func (b *podBuilder) annotate(k, v string) *podBuilder { b.p.Annotations[k] = v; return b }
func (b *podBuilder) obj() *corev1.Pod                 { return b.p }

func running(name, id string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, ContainerID: id,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func TestFromPod(t *testing.T) {
	cases := map[string]struct {
		pod    *corev1.Pod
		want   Pod
		wantOK bool
	}{
		"regular containers and native sidecars, never run-to-completion init or ephemeral containers": {
			pod: func() *corev1.Pod {
				p := pod("web").container("app", "containerd://a").initContainer("migrate", "containerd://m").
					sidecar("proxy", "containerd://p").annotate(ballastv1.ProfileRefAnnotation, "web--default").
					annotate(ballastv1.PolicyRefAnnotation, "default").obj()
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger"}}}
				p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{running("debugger", "containerd://d")}
				p.Spec.Volumes = []corev1.Volume{
					{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
					{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				}
				return p
			}(),
			want: Pod{UID: "uid-0001", Namespace: "ns", Name: "web", Mode: "measure", QOS: "Burstable",
				ProfileRef: "web--default", PolicyRef: "default",
				// In sizing.LongRunning order: native sidecars first.
				Containers:      []Container{{Name: "proxy", ID: "containerd://p", Sidecar: true}, {Name: "app", ID: "containerd://a"}},
				EmptyDirVolumes: []string{"cache"}},
			wantOK: true,
		},
		"containers that are not running have no ID to sample": {
			pod: func() *corev1.Pod {
				p := pod("web").container("app", "containerd://a").container("crashing", "containerd://c").
					container("starting", "").obj()
				p.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
				p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
				return p
			}(),
			want: Pod{UID: "uid-0001", Namespace: "ns", Name: "web", Mode: "measure", QOS: "Burstable", Terminating: true,
				Containers: []Container{{Name: "app", ID: "containerd://a"}, {Name: "crashing"}, {Name: "starting"}}},
			wantOK: true,
		},
		"a mode label with another value does not enroll": {
			pod: func() *corev1.Pod {
				p := pod("web").container("app", "containerd://a").obj()
				p.Labels[ballastv1.ModeLabel] = "yes"
				return p
			}(),
		},
		"a finished pod has nothing to sample": {
			pod: func() *corev1.Pod {
				p := pod("job").container("app", "containerd://a").obj()
				p.Status.Phase = corev1.PodSucceeded
				return p
			}(),
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := FromPod(c.pod)
			if ok != c.wantOK {
				t.Fatalf("ok = %t, want %t", ok, c.wantOK)
			}
			if ok && !maps.Equal(got.Labels, c.pod.Labels) {
				t.Errorf("labels %v, want the pod's %v", got.Labels, c.pod.Labels)
			}
			got.Labels, got.Annotations = nil, nil // the pod's own, checked above
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("FromPod (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQOSFallback(t *testing.T) {
	res := func(req, lim string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{}
		if req != "" {
			r.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req), corev1.ResourceMemory: resource.MustParse(req + "Mi")}
		}
		if lim != "" {
			r.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(lim), corev1.ResourceMemory: resource.MustParse(lim + "Mi")}
		}
		return r
	}
	cases := map[string]struct {
		containers []corev1.ResourceRequirements
		want       string
	}{
		"nothing set":                        {[]corev1.ResourceRequirements{{}}, "BestEffort"},
		"limits equal requests everywhere":   {[]corev1.ResourceRequirements{res("1", "1"), res("2", "2")}, "Guaranteed"},
		"limits only (requests default)":     {[]corev1.ResourceRequirements{res("", "1")}, "Guaranteed"},
		"requests below limits":              {[]corev1.ResourceRequirements{res("1", "2")}, "Burstable"},
		"one container without any resource": {[]corev1.ResourceRequirements{res("1", "1"), {}}, "Burstable"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := pod("p").obj()
			p.Status.QOSClass = ""
			for i, r := range c.containers {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
			}
			got, _ := FromPod(p)
			if got.QOS != c.want {
				t.Errorf("QOS = %s, want %s", got.QOS, c.want)
			}
		})
	}
}
