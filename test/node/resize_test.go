package node

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// resizeStep is one in-place step as the test saw it: the spec the controller patched, the
// time the patch was first seen, and the time the pod said Completed with status = spec.
type resizeStep struct {
	cpuReq, memReq, memLim resource.Quantity
	patched, completed     time.Time
}

// testResize: a running pod of the load app (identity loadapp/worker, whose profile is
// Sufficient) with requests far above the profile's recommendation is relabelled to mode
// resize (the webhook would have sized a pod created in resize mode, so it could not drift).
// The controller steps it 50 % toward its target per interval (5 s in the test values) and
// the real kubelet actuates each step in place: status resources follow the spec, the
// container's cgroup v1 files change, the restart count stays, resize-state goes Pending →
// Completed with Resized and ResizeCompleted events, until the requests snap within the
// 10 % threshold.
func testResize(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "resize")
	p := runningPod(t, ctx, loadPod("resize", "stepped", "worker", "measure",
		[]string{"-cpu-millis", fmt.Sprint(loadMilliCPU), "-memory-mib", fmt.Sprint(loadMiB)},
		res("600m", "400Mi"), res("", "512Mi")))
	cs := p.Status.ContainerStatuses[0]
	restarts := cs.RestartCount
	shares0, limit0 := containerCgroup(t, p)
	t.Logf("before: requests %v limits %v; cgroup cpu.shares %d memory.limit_in_bytes %d",
		p.Spec.Containers[0].Resources.Requests, p.Spec.Containers[0].Resources.Limits, shares0, limit0)

	relabelled := time.Now()
	patch := []byte(`{"metadata":{"labels":{"` + modeLabel + `":"resize"}}}`)
	if err := n.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}

	var steps []resizeStep
	var cur *resizeStep
	sawPending := false
	last := p.Spec.Containers[0].Resources.DeepCopy()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("not converged within 2 min: %d steps, pod annotations %v, spec %v, status %v",
				len(steps), p.Annotations, p.Spec.Containers[0].Resources, p.Status.ContainerStatuses[0].Resources)
		}
		time.Sleep(100 * time.Millisecond) // polling the API server; the observation times are the figures
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			t.Fatal(err)
		}
		spec := p.Spec.Containers[0].Resources
		state := p.Annotations[ballastv1.ResizeStateAnnotation]
		if !equalResources(spec, *last) {
			if cur != nil {
				t.Fatalf("spec changed again (%v) before step %d completed", spec, len(steps)+1)
			}
			cur = &resizeStep{cpuReq: spec.Requests[corev1.ResourceCPU], memReq: spec.Requests[corev1.ResourceMemory],
				memLim: spec.Limits[corev1.ResourceMemory], patched: time.Now()}
			last = spec.DeepCopy()
		}
		if state == ballastv1.ResizeStatePending {
			sawPending = true
		}
		if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s == ballastv1.ResizeStateInfeasible || s == ballastv1.ResizeStateError {
			t.Fatalf("resize-state %s: %s", s, p.Annotations[ballastv1.ResizeBlockedAnnotation])
		}
		if cur == nil || state != ballastv1.ResizeStateCompleted {
			continue
		}
		st := p.Status.ContainerStatuses[0]
		if st.Resources == nil || !equalResources(*st.Resources, spec) {
			continue // the previous step's Completed, before the controller wrote Pending
		}
		cur.completed = time.Now()
		if st.RestartCount != restarts || st.ContainerID != cs.ContainerID {
			t.Fatalf("container restarted: count %d → %d, id %s → %s", restarts, st.RestartCount, cs.ContainerID, st.ContainerID)
		}
		shares, limit := containerCgroup(t, p)
		if want := milliToShares(cur.cpuReq.MilliValue()); shares != want {
			t.Errorf("step %d: cpu.shares %d, want %d for request %s", len(steps)+1, shares, want, cur.cpuReq.String())
		}
		if want := uint64(cur.memLim.Value()) &^ 4095; limit != want { // the kernel rounds to pages
			t.Errorf("step %d: memory.limit_in_bytes %d, want %d (%s)", len(steps)+1, limit, want, cur.memLim.String())
		}
		steps = append(steps, *cur)
		t.Logf("step %d: cpu request %s, memory request %s limit %s; cgroup cpu.shares %d memory.limit_in_bytes %d; "+
			"patch seen → Completed %s", len(steps), cur.cpuReq.String(), cur.memReq.String(), cur.memLim.String(),
			shares, limit, cur.completed.Sub(cur.patched).Round(10*time.Millisecond))
		cur = nil
		wp, err := profileOf(ctx, "worker")
		if err != nil {
			t.Fatal(err)
		}
		rec := quantity(t, "cpu recommendation", recommendation(wp, "cpu").Request)
		if c := steps[len(steps)-1].cpuReq; within10(c.MilliValue(), rec.MilliValue()) {
			t.Logf("cpu request %s within 10 %% of the recommendation %s after %d steps", c.String(), rec.String(), len(steps))
			break
		}
	}
	if !sawPending && len(steps) == 1 {
		t.Logf("resize-state Pending not observed between polls (the kubelet was faster than 100 ms)")
	}
	// The first step went half way: 600m toward ≈250m lands near 425m.
	first := steps[0].cpuReq.MilliValue()
	if first >= 600 || first < 380 || first > 470 {
		t.Errorf("first step cpu request %dm, want ≈ half way from 600m to the ≈250m recommendation", first)
	}
	if steps[0].memLim.Cmp(resource.MustParse("512Mi")) >= 0 {
		t.Errorf("first step memory limit %s not lowered from 512Mi", steps[0].memLim.String())
	}
	t.Logf("relabel → first patch seen %s", steps[0].patched.Sub(relabelled).Round(10*time.Millisecond))
	var lat []string
	for _, s := range steps {
		lat = append(lat, s.completed.Sub(s.patched).Round(10*time.Millisecond).String())
	}
	t.Logf("patch → ResizeCompleted per step: %s", strings.Join(lat, ", "))

	// One Resized and one ResizeCompleted per step (the recorder may aggregate into counts).
	evs := &corev1.EventList{}
	if err := n.Client.List(ctx, evs, client.InNamespace("resize")); err != nil {
		t.Fatal(err)
	}
	count := map[string]int32{}
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == p.Name {
			count[e.Reason] += max(e.Count, 1)
		}
	}
	if count["Resized"] < int32(len(steps)) || count["ResizeCompleted"] < int32(len(steps)) {
		t.Errorf("events %v, want Resized and ResizeCompleted ≥ %d each", count, len(steps))
	}
	// Leave the node as the later steps expect it.
	if err := n.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
}

func within10(cur, rec int64) bool {
	d := cur - rec
	if d < 0 {
		d = -d
	}
	return d*10 <= cur
}

// equalResources compares requests and limits by value.
func equalResources(a, b corev1.ResourceRequirements) bool {
	eq := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, q := range x {
			if o, ok := y[k]; !ok || q.Cmp(o) != 0 {
				return false
			}
		}
		return true
	}
	return eq(a.Requests, b.Requests) && eq(a.Limits, b.Limits)
}

// milliToShares is the kubelet's cpu request → cgroup v1 cpu.shares (minimum 2).
func milliToShares(m int64) uint64 {
	s := m * 1024 / 1000
	if s < 2 {
		s = 2
	}
	return uint64(s)
}

// containerCgroup reads the app container's cgroup v1 cpu.shares and memory.limit_in_bytes
// (cgroupfs driver: kubepods/<qos>/pod<uid>/<container id>).
func containerCgroup(t *testing.T, p *corev1.Pod) (shares, limit uint64) {
	t.Helper()
	id := p.Status.ContainerStatuses[0].ContainerID
	_, id, _ = strings.Cut(id, "://")
	cpuDir, err := podCgroup("cpu", *p)
	if err != nil {
		t.Fatal(err)
	}
	memDir, err := podCgroup("memory", *p)
	if err != nil {
		t.Fatal(err)
	}
	return readUint(t, filepath.Join(cpuDir, id, "cpu.shares")), readUint(t, filepath.Join(memDir, id, "memory.limit_in_bytes"))
}
