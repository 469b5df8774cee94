package podcache

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// readPod decodes the testdata pod: a Deployment's pod as the API server serves it after
// admission (service-account volume, tolerations, managedFields, kubelet status).
func readPod(t testing.TB) (*corev1.Pod, []byte) {
	t.Helper()
	b, err := os.ReadFile("testdata/deployment-pod.json")
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{}
	if err := json.Unmarshal(b, p); err != nil {
		t.Fatal(err)
	}
	return p, b
}

func slim(t testing.TB, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := Slim(p.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.Pod)
}

// TestSlimKeepsWhatBallastReads: what the controllers read survives, field for field, the
// rest is gone, QoS class and resources derived from the slim pod are the full pod's, and
// a second pass changes nothing.
func TestSlimKeepsWhatBallastReads(t *testing.T) {
	full, _ := readPod(t)
	withReadConditions(full)
	s := slim(t, full)

	meta := full.ObjectMeta.DeepCopy()
	meta.ManagedFields = nil
	if !equality.Semantic.DeepEqual(s.ObjectMeta, *meta) {
		t.Errorf("metadata changed beyond managedFields:\n%+v\nwant\n%+v", s.ObjectMeta, *meta)
	}
	if s.Annotations[ballastv1.ProfileRefAnnotation] == "" || s.Labels[ballastv1.ModeLabel] != "resize" {
		t.Errorf("Ballast's label or annotation lost: %v %v", s.Labels, s.Annotations)
	}
	for i, c := range full.Spec.Containers {
		got := s.Spec.Containers[i]
		if got.Name != c.Name || !equality.Semantic.DeepEqual(got.Resources, c.Resources) ||
			!reflect.DeepEqual(got.ResizePolicy, c.ResizePolicy) || !reflect.DeepEqual(got.RestartPolicy, c.RestartPolicy) {
			t.Errorf("container %s: %+v", c.Name, got)
		}
		if got.Image != "" || got.Env != nil || got.VolumeMounts != nil || got.ReadinessProbe != nil || got.SecurityContext != nil {
			t.Errorf("container %s keeps fields nobody reads: %+v", c.Name, got)
		}
	}
	for i, cs := range full.Status.ContainerStatuses {
		got := s.Status.ContainerStatuses[i]
		want := corev1.ContainerStatus{Name: cs.Name, State: cs.State, LastTerminationState: cs.LastTerminationState, Ready: cs.Ready,
			Started: cs.Started, RestartCount: cs.RestartCount, Resources: cs.Resources, AllocatedResources: cs.AllocatedResources}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("status of %s: %+v, want %+v", cs.Name, got, want)
		}
	}
	if got := s.Status.ContainerStatuses[1].LastTerminationState.Terminated; got == nil || got.Reason != "OOMKilled" {
		t.Errorf("the OOM kill in lastState is lost: %+v", got)
	}
	if s.Spec.NodeName != full.Spec.NodeName || s.Status.Phase != full.Status.Phase || s.Status.QOSClass != full.Status.QOSClass {
		t.Errorf("node, phase or QoS class lost: %+v", s.Status)
	}
	checkReadConditions(t, s, full)
	if len(s.Spec.Volumes) != 1 || s.Spec.Volumes[0].EmptyDir == nil || s.Spec.Volumes[0].EmptyDir.SizeLimit.String() != "1Gi" {
		t.Errorf("volumes %+v, want the emptyDir only", s.Spec.Volumes)
	}
	if s.Spec.Tolerations != nil || s.Spec.Affinity != nil || s.Status.PodIPs != nil {
		t.Errorf("scheduling and network fields kept: %+v", s.Spec)
	}
	if got, want := sizing.QoS(s), sizing.QoS(full); got != want || got != corev1.PodQOSBurstable {
		t.Errorf("QoS of the slim pod %s, of the full pod %s", got, want)
	}
	again := slim(t, s)
	if !equality.Semantic.DeepEqual(again, s) {
		t.Errorf("a second pass changed the pod")
	}
	// Equal lists are one map: within the pod (spec and status of a resized container) and
	// across pods (replicas); a DeepCopy, what a controller changes, has lists of its own.
	other := slim(t, full)
	api, st := s.Spec.Containers[0].Resources, s.Status.ContainerStatuses[0]
	if !sameMap(api.Requests, st.AllocatedResources) || !sameMap(api.Requests, st.Resources.Requests) || !sameMap(api.Limits, st.Resources.Limits) {
		t.Errorf("the status's resource lists equal to the spec's are not shared")
	}
	if !sameMap(api.Requests, other.Spec.Containers[0].Resources.Requests) || sameMap(api.Requests, api.Limits) {
		t.Errorf("replicas' equal lists are not shared, or unequal ones are")
	}
	cp := s.DeepCopy()
	cp.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	if q := other.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "500m" {
		t.Errorf("changing a DeepCopy changed another cached pod: cpu %s", q.String())
	}
	cm := &corev1.ConfigMap{Data: map[string]string{"a": "b"}}
	if out, _ := Slim(cm); out != any(cm) || cm.Data["a"] != "b" {
		t.Errorf("other objects must pass unchanged")
	}
}

// withReadConditions gives the testdata pod (the kubelet's five conditions) a readiness
// gate, its condition, a pending resize and a condition of some other controller.
func withReadConditions(p *corev1.Pod) {
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	p.Status.Conditions = append(p.Status.Conditions,
		corev1.PodCondition{Type: "example.com/gate", Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred, Message: "Node didn't have enough capacity"},
		corev1.PodCondition{Type: "example.com/unrelated", Status: corev1.ConditionFalse})
}

// checkReadConditions: got keeps Ready, the resize condition and the gate's, field for
// field and in order, and none of the others.
func checkReadConditions(t *testing.T, got, full *corev1.Pod) {
	t.Helper()
	var want []corev1.PodCondition
	for _, c := range full.Status.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.PodResizePending || c.Type == "example.com/gate" {
			want = append(want, c)
		}
	}
	if len(want) != 3 || !equality.Semantic.DeepEqual(got.Status.Conditions, want) {
		t.Errorf("conditions %+v, want %+v", got.Status.Conditions, want)
	}
	if !reflect.DeepEqual(got.Labels, full.Labels) {
		t.Errorf("labels %v, want %v", got.Labels, full.Labels)
	}
	want2 := maps.Clone(full.Annotations)
	delete(want2, lastApplied)
	if !reflect.DeepEqual(got.Annotations, want2) {
		t.Errorf("annotations %v, want %v", got.Annotations, want2)
	}
}

func sameMap(a, b corev1.ResourceList) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestPlacementKeepsWhatUnderstudyReads: owner, node, readiness and phase survive (what
// DeploymentOf, PodReady and podGone read), nothing of the containers does.
func TestPlacementKeepsWhatUnderstudyReads(t *testing.T) {
	full, _ := readPod(t)
	withReadConditions(full)
	out, err := Placement(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	p := out.(*corev1.Pod)
	if p.Spec.NodeName != full.Spec.NodeName || !reflect.DeepEqual(p.Spec.ReadinessGates, full.Spec.ReadinessGates) ||
		p.Status.Phase != full.Status.Phase ||
		!reflect.DeepEqual(p.OwnerReferences, full.OwnerReferences) || !reflect.DeepEqual(p.Labels, full.Labels) || p.ManagedFields != nil {
		t.Errorf("placement lost what Understudy reads: %+v", p)
	}
	checkReadConditions(t, p, full)
	if p.Spec.Containers != nil || p.Status.ContainerStatuses != nil || p.Spec.Volumes != nil {
		t.Errorf("placement keeps containers or volumes")
	}
	if again, _ := Placement(p.DeepCopy()); !equality.Semantic.DeepEqual(again, p) {
		t.Errorf("a second pass changed the pod")
	}
}

// BenchmarkCachedPod reports the heap one cached pod holds among 2,000 replicas of the
// testdata pod: with managedFields stripped only (the previous transform), slimmed (the
// manager's cache), slimmed with every pod's cpu request different (spec and status), and
// as Understudy's cache keeps it.
func BenchmarkCachedPod(b *testing.B) {
	_, raw := readPod(b)
	const n = 2000
	// distinct gives pod i requests of its own, in spec and status alike (every pod sized
	// differently: the least interning can share).
	distinct := func(p *corev1.Pod, i int) {
		q := *resource.NewMilliQuantity(int64(100+i), resource.DecimalSI)
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q
		st := &p.Status.ContainerStatuses[0]
		st.AllocatedResources[corev1.ResourceCPU], st.Resources.Requests[corev1.ResourceCPU] = q, q
	}
	var unique bool
	measure := func(transform func(*corev1.Pod) any) float64 {
		return heapPerObject(n, func(i int) any {
			p := &corev1.Pod{}
			if err := json.Unmarshal(raw, p); err != nil {
				b.Fatal(err)
			}
			if unique {
				distinct(p, i)
			}
			return transform(p)
		})
	}
	var stripped, slimmed, slimDistinct, placed float64
	for b.Loop() {
		unique = false
		stripped = measure(func(p *corev1.Pod) any { p.ManagedFields = nil; return p })
		slimmed = measure(func(p *corev1.Pod) any { o, _ := Slim(p); return o })
		placed = measure(func(p *corev1.Pod) any { o, _ := Placement(p); return o })
		unique = true
		slimDistinct = measure(func(p *corev1.Pod) any { o, _ := Slim(p); return o })
	}
	b.ReportMetric(stripped, "B/pod-stripped")
	b.ReportMetric(slimmed, "B/pod-slim")
	b.ReportMetric(slimDistinct, "B/pod-slim-distinct")
	b.ReportMetric(placed, "B/pod-placement")
	b.ReportMetric(stripped/slimmed, "ratio-slim")
}

// heapPerObject is the heap, in bytes, that each of n objects made by build holds once
// all of them are kept.
func heapPerObject(n int, build func(i int) any) float64 {
	keep := make([]any, 0, n)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		keep = append(keep, build(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// TestReplicasShareLabelMaps: pods with equal labels and annotations (a workload's
// replicas) hold one map of each after Slim, equal to what they carried; a pod whose labels
// differ keeps its own.
func TestReplicasShareLabelMaps(t *testing.T) {
	pod := func(name, hash string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
			Labels:      map[string]string{"app": "web", "pod-template-hash": hash},
			Annotations: map[string]string{"ballast.tightlinesoftware.com/profile-ref": "web--shop-1234"}}}
	}
	slim := func(p *corev1.Pod) *corev1.Pod {
		out, err := Slim(p)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.Pod)
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	a, b, other := slim(pod("web-a", "5f9c")), slim(pod("web-b", "5f9c")), slim(pod("web-c", "77aa"))
	if want := pod("x", "5f9c").Labels; !maps.Equal(a.Labels, want) || !maps.Equal(b.Labels, want) {
		t.Fatalf("labels changed: %v, %v, want %v", a.Labels, b.Labels, want)
	}
	if !same(a.Labels, b.Labels) || !same(a.Annotations, b.Annotations) {
		t.Error("two replicas with equal labels and annotations hold maps of their own")
	}
	if same(a.Labels, other.Labels) || !maps.Equal(other.Labels, pod("x", "77aa").Labels) {
		t.Errorf("a pod with other labels got %v", other.Labels)
	}
	if !same(a.Annotations, other.Annotations) {
		t.Error("equal annotations of another workload's pod are not shared")
	}
}
