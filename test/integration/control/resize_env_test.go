package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// The resize suites play the kubelet: there is no kubelet here, so the tests write pod
// status the way a 1.37 kubelet does (phase, containerStatuses[].resources and
// allocatedResources, observedGeneration, the PodResize* conditions).

// resizeGate turns on the alpha field spec.podPreemptionPolicy of Node on the API server.
var resizeGate = harness.KubeOptions{APIServerFlags: map[string]string{
	"feature-gates": "InPlacePodVerticalScalingSchedulerPreemption=true"}}

// resizePolicy is the fast test policy with a resize interval of intervalSeconds (the
// controllers' cooldown reads the fake clock; their requeue is real time).
func resizePolicy(interval string) ballastv1.ResourcePolicySpec {
	p := fastPolicy()
	p.Behaviors.Resize.Interval = interval
	// A short cooldown after raises, so the suites can shrink again after a raise-back;
	// resize_budget_test.go sets the default hour where it checks the cooldown.
	p.Behaviors.Resize.Cooldown = "2s"
	return p
}

// makeNode creates a Ready linux node with the given allocatable, the way a 1.37.2
// kubelet registers itself.
func (e *env) makeNode(t *testing.T, name, cpu, mem string, pods int64, os string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": os}}}
	mustCreate(t, e.c, n)
	n.Status = corev1.NodeStatus{
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OperatingSystem: os, Architecture: "amd64",
			ContainerRuntimeVersion: "containerd://1.7.0"},
	}
	if err := e.c.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// boundPod is pod() bound to node with the given app resources and mode.
func boundPod(name, ns, mode, app, node string, r corev1.ResourceRequirements) *corev1.Pod {
	p := pod(name, ns, mode, app, "api")
	p.Spec.NodeName = node
	p.Spec.Containers[0].Resources = r
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	return p
}

// running plays the kubelet starting a pod: Running, Ready, every container's allocated
// and actual resources equal to its spec, generation observed, no resize conditions.
func (e *env) running(t *testing.T, key types.NamespacedName) *corev1.Pod {
	t.Helper()
	return e.kubelet(t, key, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		actuate(p)
	})
}

// actuate sets the status the kubelet reports once it applied the spec's resources.
func actuate(p *corev1.Pod) {
	p.Status.ObservedGeneration = p.Generation
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Ready: true, Started: ptr.To(true), Image: c.Image, ImageID: c.Image, ContainerID: "containerd://" + c.Name,
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			AllocatedResources: c.Resources.Requests.DeepCopy(),
			Resources:          &corev1.ResourceRequirements{Requests: c.Resources.Requests.DeepCopy(), Limits: c.Resources.Limits.DeepCopy()},
		})
	}
	var kept []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			kept = append(kept, c)
		}
	}
	p.Status.Conditions = kept
}

// defer_ plays the kubelet deferring the pod's current generation.
func deferResize(p *corev1.Pod, msg string) {
	p.Status.ObservedGeneration = p.Generation
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending,
		Status: corev1.ConditionTrue, Reason: "Deferred", Message: msg, ObservedGeneration: p.Generation,
		LastTransitionTime: metav1.Now()})
}

// kubelet applies f to the pod's status and writes it back, retrying conflicts.
func (e *env) kubelet(t *testing.T, key types.NamespacedName, f func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	eventually(t, 10*time.Second, "status of "+key.String()+" written", func() error {
		if err := e.c.Get(context.Background(), key, p); err != nil {
			return err
		}
		f(p)
		return e.c.Status().Update(context.Background(), p)
	})
	return p
}

// readyProfile feeds a profile the samples that make it Sufficient with cpu 240m and
// memory 192Mi usage (recommendations: cpu request 300m, memory request 192Mi, memory
// limit ≈ 230Mi).
func (e *env) readyProfile(t *testing.T, name string, cpuMilli, memBytes float64) *ballastv1.WorkloadProfile {
	t.Helper()
	wp := e.profile(t, name, "profile "+name+" has a hash", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no hash yet")
		}
		return nil
	})
	e.writeSamples(t, wp.Status.MeasurementHash, "app", series.ResourceCPU, repeat(cpuMilli, 13), 20*time.Second)
	e.writeSamples(t, wp.Status.MeasurementHash, "app", series.ResourceMemory, repeat(memBytes, 13), 20*time.Second)
	e.clock.Step(time.Second)
	e.reconcile(t, name)
	return e.profile(t, name, "profile "+name+" Sufficient", func(wp *ballastv1.WorkloadProfile) error {
		if !wp.Status.MeetsThreshold {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		return nil
	})
}

// waitPod polls a pod until cond holds.
func (e *env) waitPod(t *testing.T, key types.NamespacedName, what string, cond func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	eventually(t, 30*time.Second, what, func() error {
		if err := e.c.Get(context.Background(), key, p); err != nil {
			return err
		}
		return cond(p)
	})
	return p
}

// events returns "Type Reason Message" of the pod's events from source ballast.
func (e *env) events(t *testing.T, p *corev1.Pod) []string {
	t.Helper()
	list := &corev1.EventList{}
	if err := e.c.List(context.Background(), list, client.InNamespace(p.Namespace)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.UID == p.UID && ev.Source.Component == ballastv1.EventComponent {
			out = append(out, ev.Type+" "+ev.Reason+" "+ev.Message)
		}
	}
	return out
}

// waitEvent polls until the pod has an event whose "Type Reason Message" contains want.
func (e *env) waitEvent(t *testing.T, p *corev1.Pod, want string) {
	t.Helper()
	eventually(t, 30*time.Second, "event "+want+" on "+p.Name, func() error {
		for _, ev := range e.events(t, p) {
			if strings.Contains(ev, want) {
				return nil
			}
		}
		return fmt.Errorf("events %q", e.events(t, p))
	})
}

// metric sums the samples of a counter or gauge family whose labels include want.
func metric(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metrics
				}
			}
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}

func res2(cpuReq, memReq, memLim string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq),
		corev1.ResourceMemory: resource.MustParse(memReq)}}
	if memLim != "" {
		r.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memLim)}
	}
	return r
}

func cpuOf(p *corev1.Pod) string { return p.Spec.Containers[0].Resources.Requests.Cpu().String() }
func memLimOf(p *corev1.Pod) int64 {
	return p.Spec.Containers[0].Resources.Limits.Memory().Value()
}
