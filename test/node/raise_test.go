package node

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// testResizeOOM: a resize-mode pod with a 64 MiB limit whose child process is OOM-killed
// (the container survives) has its memory limit raised in place by the fast-raise loop,
// without waiting for an interval; the container's memory.limit_in_bytes changes and it
// does not restart. The figure is kill (the load app's log) → new limit in the cgroup.
func testResizeOOM(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "oomraise")
	// Measure mode until the profile exists, so the webhook stamps its name; the child
	// is killed about 12 s after start, before the profile can be Sufficient.
	p := runningPod(t, ctx, loadPod("oomraise", "raised", "oomraise", "measure",
		[]string{"-cpu-millis", "20", "-memory-mib", "16", "-oom-child-after", "12s"},
		res("20m", "32Mi"), res("", oomLimit)))
	if p.Annotations[ballastv1.ProfileRefAnnotation] == "" {
		t.Fatalf("no profile-ref on the pod: %v", p.Annotations)
	}
	if err := n.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+modeLabel+`":"resize"}}}`))); err != nil {
		t.Fatal(err)
	}
	id := p.Status.ContainerStatuses[0].ContainerID
	_, id, _ = strings.Cut(id, "://")
	dir, err := podCgroup("memory", *p)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, id, "memory.limit_in_bytes")
	before := readUint(t, file)
	var raisedAt time.Time
	var after uint64
	deadline := time.Now().Add(75 * time.Second)
	for after = before; after == before; after = readUint(t, file) {
		if time.Now().After(deadline) {
			t.Fatalf("memory.limit_in_bytes still %d after 75 s; pod events %v", before, podEvents(t, ctx, p))
		}
		time.Sleep(20 * time.Millisecond) // reading a cgroup file; the change time is the figure
	}
	raisedAt = time.Now()
	killed := killTime(t, ctx, p)
	if killed == 0 {
		t.Fatal("no kill time in the load app's log")
	}
	if after <= before {
		t.Fatalf("memory.limit_in_bytes %d → %d: lowered, not raised", before, after)
	}
	t.Logf("OOM kill → memory.limit_in_bytes %d → %d in the cgroup: %d ms", before, after, raisedAt.UnixMilli()-killed)
	harness.Eventually(t, 20*time.Second, "raise recorded", func() error {
		cur := &corev1.Pod{}
		if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		st := cur.Status.ContainerStatuses[0]
		if st.RestartCount != 0 || st.ContainerID != p.Status.ContainerStatuses[0].ContainerID {
			return fmt.Errorf("container restarted (%d, %s)", st.RestartCount, st.ContainerID)
		}
		if ev := podEvents(t, ctx, cur); !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, "ResizeRaised") }) {
			return fmt.Errorf("no ResizeRaised event: %v", ev)
		}
		lim := cur.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
		if uint64(lim.Value())&^4095 != after {
			return fmt.Errorf("spec memory limit %s, cgroup %d", lim.String(), after)
		}
		return nil
	})
	if r := controlCounter(t, ctx, "ballast_resize_raises_total", `trigger="oom"`, `result="sent"`); r < 1 {
		t.Errorf("ballast_resize_raises_total{trigger=oom,result=sent} %v, want ≥ 1", r)
	}
	if err := n.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// testResizeEphemeral: a resize-mode pod at its cpu and memory recommendations whose
// ephemeral-storage request drifted is not patched (pods/resize cannot change it): the
// evaluation is skipped as not_resizable and the pod keeps its spec.
func testResizeEphemeral(t *testing.T, ctx context.Context) {
	createNamespace(t, ctx, "eph")
	wp, err := profileOf(ctx, "worker")
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem := recommendation(wp, "cpu"), recommendation(wp, "memory")
	req := res(cpu.Request, mem.Request)
	req[corev1.ResourceEphemeralStorage] = resource.MustParse("100Mi")
	p := runningPod(t, ctx, loadPod("eph", "disk", "worker", "measure",
		[]string{"-cpu-millis", fmt.Sprint(loadMilliCPU), "-memory-mib", fmt.Sprint(loadMiB)}, req, res("", mem.Limit)))
	before := controlCounter(t, ctx, "ballast_resize_skipped_total", `reason="not_resizable"`, `namespace="eph"`)
	if err := n.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+modeLabel+`":"resize"}}}`))); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "a not_resizable skip", func() error {
		if got := controlCounter(t, ctx, "ballast_resize_skipped_total", `reason="not_resizable"`, `namespace="eph"`); got <= max(before, 0) {
			return fmt.Errorf("ballast_resize_skipped_total{reason=not_resizable,namespace=eph} %v", got)
		}
		return nil
	})
	cur := &corev1.Pod{}
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
		t.Fatal(err)
	}
	if !equalResources(cur.Spec.Containers[0].Resources, p.Spec.Containers[0].Resources) || cur.Annotations[ballastv1.LastResizeAnnotation] != "" {
		t.Errorf("pod resized: %v → %v, last-resize %q", p.Spec.Containers[0].Resources, cur.Spec.Containers[0].Resources,
			cur.Annotations[ballastv1.LastResizeAnnotation])
	}
	if err := n.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
}
