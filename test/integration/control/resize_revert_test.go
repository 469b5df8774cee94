package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
)

// TestResizeRevert: a pod that turns NotReady, or is OOM-killed (a restart with
// OOMKilled, as the kubelet reports it), shortly after Ballast shrank it is raised back
// to its pre-shrink size at once, and the revert is noted on the pod and its profile
// (ResizeReverted) and counted.
func TestResizeRevert(t *testing.T) {
	e := startResizeEnv(t)
	ctx := context.Background()
	e.makeNode(t, "rz-rv", "8", "16Gi", 110, "linux")
	ns := e.namespace(t, "rz-rv")
	mustCreate(t, e.c, boundPod("web", ns, "resize", "rz-rv", "rz-rv", res2("1", "1Gi", "2Gi")))
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	p := e.running(t, key)
	name := p.Annotations[ballastv1.ProfileRefAnnotation]
	e.readyProfile(t, name, 240, 192<<20)

	shrunk := func(what string) *corev1.Pod {
		e.waitPod(t, key, what, func(p *corev1.Pod) error {
			if cpuOf(p) == "1" || memLimOf(p) >= 2<<30 || p.Annotations[ballastv1.ResizeStateAnnotation] != ballastv1.ResizeStatePending {
				return fmt.Errorf("cpu %s memory limit %d state %q", cpuOf(p), memLimOf(p), p.Annotations[ballastv1.ResizeStateAnnotation])
			}
			return nil
		})
		e.kubelet(t, key, actuate)
		return e.waitPod(t, key, what+" Completed", func(p *corev1.Pod) error {
			if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateCompleted {
				return fmt.Errorf("state %q", s)
			}
			return nil
		})
	}
	raisedBack := func(what string) *corev1.Pod {
		return e.waitPod(t, key, what, func(p *corev1.Pod) error {
			r := p.Spec.Containers[0].Resources
			if cpuOf(p) != "1" || r.Requests.Memory().String() != "1Gi" || r.Limits.Memory().String() != "2Gi" {
				return fmt.Errorf("requests %v limits %v", r.Requests, r.Limits)
			}
			return nil
		})
	}

	small := shrunk("first shrink")
	t.Logf("shrunk to cpu %s, memory %s / limit %s", cpuOf(small), small.Spec.Containers[0].Resources.Requests.Memory(), small.Spec.Containers[0].Resources.Limits.Memory())
	// The pod turns NotReady (its readiness probe fails under the smaller size).
	e.kubelet(t, key, func(p *corev1.Pod) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = corev1.ConditionFalse, "ContainersNotReady"
			}
		}
	})
	p = raisedBack("raised back after NotReady")
	if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStatePending {
		t.Errorf("raise-back not recorded as a resize: state %q", s)
	}
	e.waitEvent(t, p, "Warning ResizeReverted the pod turned NotReady (ContainersNotReady)")
	e.waitEvent(t, p, "raised back to the pre-shrink size (app: cpu request 650m→1")
	if got := metric(t, e.registry, "ballast_resize_reverts_total", map[string]string{"trigger": "not_ready", "result": "sent", "profile": name, "namespace": ns}); got != 1 {
		t.Errorf("reverts{not_ready,sent} = %v", got)
	}
	profileEvent(t, e, name, "pod "+ns+"/web: the pod turned NotReady")
	// Exactly one raise-back: a further status write of the still NotReady pod sends nothing.
	e.kubelet(t, key, actuate)
	e.waitPod(t, key, "raise-back Completed", func(p *corev1.Pod) error {
		if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateCompleted {
			return fmt.Errorf("state %q", s)
		}
		return nil
	})
	if got := metric(t, e.registry, "ballast_resize_reverts_total", map[string]string{"profile": name}); got != 1 {
		t.Errorf("reverts after the raise-back completed = %v, want 1", got)
	}

	// Ready again; after the interval Ballast shrinks it again, and the container is then
	// OOM-killed: raised back again, trigger oom.
	e.kubelet(t, key, func(p *corev1.Pod) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = corev1.ConditionTrue, ""
			}
		}
	})
	e.clock.Step(3 * time.Second)
	shrunk("second shrink")
	e.kubelet(t, key, func(p *corev1.Pod) {
		st := &p.Status.ContainerStatuses[0]
		st.RestartCount++
		st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}
	})
	p = raisedBack("raised back after an OOM kill")
	e.waitEvent(t, p, "Warning ResizeReverted container app was OOM-killed (restart 1)")
	if got := metric(t, e.registry, "ballast_resize_reverts_total", map[string]string{"trigger": "oom", "result": "sent", "profile": name}); got != 1 {
		t.Errorf("reverts{oom,sent} = %v", got)
	}

	// Outside the window a NotReady pod is left alone: shrink, step the clock past the
	// window (10m), NotReady ⇒ no raise-back.
	e.kubelet(t, key, actuate)
	e.clock.Step(3 * time.Second)
	small = shrunk("third shrink")
	e.clock.Step(11 * time.Minute)
	e.kubelet(t, key, func(p *corev1.Pod) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
	})
	// The next evaluation (the interval has passed) may step it further down; it never
	// goes back up to the pre-shrink size.
	eventually(t, 10*time.Second, "the NotReady status seen", func() error {
		cur := &corev1.Pod{}
		if err := e.c.Get(ctx, key, cur); err != nil {
			return err
		}
		if podReady(cur) {
			return fmt.Errorf("still Ready")
		}
		return nil
	})
	before := metric(t, e.registry, "ballast_resize_skipped_total", map[string]string{"profile": name})
	eventually(t, 20*time.Second, "two more evaluations", func() error {
		if n := metric(t, e.registry, "ballast_resize_skipped_total", map[string]string{"profile": name}); n < before+2 {
			return fmt.Errorf("%v evaluations", n-before)
		}
		return nil
	})
	if got := metric(t, e.registry, "ballast_resize_reverts_total", map[string]string{"profile": name}); got != 2 {
		t.Errorf("reverts outside the window: %v, want still 2", got)
	}
	if cur := e.waitPod(t, key, "not raised back", func(*corev1.Pod) error { return nil }); cpuOf(cur) == "1" {
		t.Errorf("raised back outside the window: cpu %s (was %s)", cpuOf(cur), cpuOf(small))
	}
}

// TestResizeRevertOOMStream: a kill reported on the profile's OOM stream (the node agent's
// path, which sees a child process killed while the container lives on) shortly after a
// shrink raises the pod back too, through the fast-raise loop, instead of the plain OOM bump.
func TestResizeRevertOOMStream(t *testing.T) {
	e := startResizeEnv(t)
	ctx := context.Background()
	e.makeNode(t, "rz-rs", "8", "16Gi", 110, "linux")
	ns := e.namespace(t, "rz-rs")
	mustCreate(t, e.c, boundPod("web", ns, "resize", "rz-rs", "rz-rs", res2("1", "1Gi", "2Gi")))
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	p := e.running(t, key)
	name := p.Annotations[ballastv1.ProfileRefAnnotation]
	wp := e.readyProfile(t, name, 240, 192<<20)
	e.waitPod(t, key, "shrink", func(p *corev1.Pod) error {
		if cpuOf(p) == "1" || p.Annotations[ballastv1.ResizeStateAnnotation] != ballastv1.ResizeStatePending {
			return fmt.Errorf("cpu %s state %q", cpuOf(p), p.Annotations[ballastv1.ResizeStateAnnotation])
		}
		return nil
	})
	e.kubelet(t, key, actuate)
	p = e.waitPod(t, key, "shrink Completed", func(p *corev1.Pod) error {
		if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateCompleted {
			return fmt.Errorf("state %q", s)
		}
		return nil
	})
	lim := memLimOf(p)
	if _, err := e.writer.AddOOM(ctx, wp.Status.MeasurementHash, series.OOMEvent{Container: "app", Pod: ns + "/web",
		Node: "rz-rs", At: e.clock.Now(), PeakBytes: lim, LimitBytes: lim, Kind: "container"}); err != nil {
		t.Fatal(err)
	}
	// The pre-shrink limit (2Gi) is above the OOM bump of the shrunk limit: raised back to it.
	p = e.waitPod(t, key, "raised back after the OOM stream's kill", func(p *corev1.Pod) error {
		if cpuOf(p) != "1" || memLimOf(p) != 2<<30 {
			return fmt.Errorf("cpu %s memory limit %d", cpuOf(p), memLimOf(p))
		}
		return nil
	})
	e.waitEvent(t, p, "Warning ResizeReverted container app was OOM-killed at ")
	if got := metric(t, e.registry, "ballast_resize_reverts_total", map[string]string{"trigger": "oom", "result": "sent", "profile": name}); got != 1 {
		t.Errorf("reverts{oom,sent} = %v", got)
	}
	if got := metric(t, e.registry, "ballast_resize_raises_total", map[string]string{"trigger": "oom", "result": "sent"}); got != 0 {
		t.Errorf("a plain OOM raise was sent too: raises{oom,sent} = %v", got)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// profileEvent polls until the cluster-scoped profile has a ResizeReverted event (in the
// default namespace, where events of cluster-scoped objects go) containing want.
func profileEvent(t *testing.T, e *env, profile, want string) {
	t.Helper()
	eventually(t, 30*time.Second, "ResizeReverted on profile "+profile, func() error {
		list := &corev1.EventList{}
		if err := e.c.List(context.Background(), list, client.InNamespace("default")); err != nil {
			return err
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.InvolvedObject.Kind == "WorkloadProfile" && ev.InvolvedObject.Name == profile {
				seen = append(seen, ev.Reason+" "+ev.Message)
				if ev.Reason == "ResizeReverted" && strings.Contains(ev.Message, want) {
					return nil
				}
			}
		}
		return fmt.Errorf("profile events %q", seen)
	})
}
