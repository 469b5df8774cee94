package control

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// pressureReadings are n back-to-back 10 s readings of pod's app container at pct percent
// stalled, the last one ending at end, as the node agent writes them.
func pressureReadings(hash, pod string, end time.Time, n int, pct int64) []store.PressureEntry {
	out := make([]store.PressureEntry, 0, n)
	for i := n - 1; i >= 0; i-- {
		out = append(out, store.PressureEntry{Profile: hash, Reading: series.PressureReading{
			Container: "app", Pod: pod, Node: "rz-press", At: end.Add(-time.Duration(i) * 10 * time.Second),
			Interval: 10 * time.Second, StallPerSec: pct * series.StallScale / 100, Source: series.PressureSourcePSI}})
	}
	return out
}

// Sustained memory pressure (≥ 10 % stalled for ≥ 30 s, the defaults) raises a resize-mode
// pod's memory limit in place at once, through the real API server, from the real store's
// pressure stream; a pod of the same profile whose pressure did not last is left alone,
// and so is the pressured pod once raised until a new run builds up.
func TestResizePressureRaise(t *testing.T) {
	e := startResizeEnv(t)
	ctx := context.Background()
	e.makeNode(t, "rz-press", "8", "16Gi", 110, "linux")
	ns := e.namespace(t, "rz-press")
	mustCreate(t, e.c, boundPod("hot", ns, "resize", "rz-press", "rz-press", res2("100m", "128Mi", "256Mi")))
	mustCreate(t, e.c, boundPod("brief", ns, "resize", "rz-press", "rz-press", res2("100m", "128Mi", "256Mi")))
	hot, brief := types.NamespacedName{Namespace: ns, Name: "hot"}, types.NamespacedName{Namespace: ns, Name: "brief"}
	p := e.running(t, hot)
	e.running(t, brief)
	// The profile is still accruing: a fast raise needs no readiness.
	wp := e.profile(t, p.Annotations[ballastv1.ProfileRefAnnotation], "profile hash", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no hash")
		}
		return nil
	})
	hash, now := wp.Status.MeasurementHash, e.clock.Now()
	// brief: 20 s at 80 %, then a break (nothing written: below the floor), then 20 s more.
	var entries []store.PressureEntry
	entries = append(entries, pressureReadings(hash, ns+"/brief", now.Add(-30*time.Second), 2, 80)...)
	entries = append(entries, pressureReadings(hash, ns+"/brief", now, 2, 80)...)
	// hot: 30 s at 35 %.
	entries = append(entries, pressureReadings(hash, ns+"/hot", now, 3, 35)...)
	if err := e.writer.AddPressure(ctx, entries); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	// max(256Mi × 1.2, 256Mi + 100Mi) = 356Mi; the request stays (Burstable).
	p = e.waitPod(t, hot, "memory limit raised", func(p *corev1.Pod) error {
		if memLimOf(p) != 356<<20 {
			return fmt.Errorf("memory limit %d", memLimOf(p))
		}
		return nil
	})
	t.Logf("sustaining reading in the stream → memory limit raised on the pod: %v", time.Since(written).Round(time.Millisecond))
	if r := p.Spec.Containers[0].Resources.Requests.Memory().String(); r != "128Mi" {
		t.Errorf("request %s, want 128Mi unchanged", r)
	}
	if p.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("QoS %s", p.Status.QOSClass)
	}
	e.waitEvent(t, p, "Normal ResizeRaised container app under sustained memory pressure: 35% of the time stalled for 30s")
	if got := metric(t, e.registry, "ballast_resize_raises_total", map[string]string{"trigger": "pressure", "result": "sent"}); got != 1 {
		t.Errorf("pressure raises sent = %v, want 1", got)
	}
	// The same tick read brief's readings (written first): never sustained, never raised.
	b := &corev1.Pod{}
	if err := e.c.Get(ctx, brief, b); err != nil {
		t.Fatal(err)
	}
	if memLimOf(b) != 256<<20 || b.Annotations[ballastv1.ResizeStateAnnotation] != "" {
		t.Errorf("brief pod touched: limit %d, resize-state %q", memLimOf(b), b.Annotations[ballastv1.ResizeStateAnnotation])
	}

	// The kubelet actuates the raise; one more high reading is not a new 30 s run.
	p = e.kubelet(t, hot, actuate)
	e.waitPod(t, hot, "raise completed", func(p *corev1.Pod) error {
		if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateCompleted {
			return fmt.Errorf("resize-state %q", s)
		}
		return nil
	})
	e.clock.Step(10 * time.Second)
	if err := e.writer.AddPressure(ctx, pressureReadings(hash, ns+"/hot", e.clock.Now(), 1, 90)); err != nil {
		t.Fatal(err)
	}
	// A marker written after it: brief's next reading grows its 20 s run to 30 s, so once
	// brief is raised, hot's reading has been read too.
	if err := e.writer.AddPressure(ctx, pressureReadings(hash, ns+"/brief", e.clock.Now(), 1, 50)); err != nil {
		t.Fatal(err)
	}
	e.waitPod(t, brief, "brief raised after its own sustained run", func(p *corev1.Pod) error {
		if memLimOf(p) != 356<<20 {
			return fmt.Errorf("memory limit %d", memLimOf(p))
		}
		return nil
	})
	if err := e.c.Get(ctx, hot, p); err != nil {
		t.Fatal(err)
	}
	if memLimOf(p) != 356<<20 {
		t.Errorf("hot raised again after one reading: limit %d", memLimOf(p))
	}

	// On a node of 300Mi the step is capped at the node's allocatable memory; once there,
	// more pressure raises nothing and says why.
	e.makeNode(t, "rz-press-small", "2", "300Mi", 110, "linux")
	mustCreate(t, e.c, boundPod("small", ns, "resize", "rz-press", "rz-press-small", res2("100m", "128Mi", "256Mi")))
	small := types.NamespacedName{Namespace: ns, Name: "small"}
	e.running(t, small)
	if err := e.writer.AddPressure(ctx, pressureReadings(hash, ns+"/small", e.clock.Now(), 3, 60)); err != nil {
		t.Fatal(err)
	}
	e.waitPod(t, small, "raised to the node's 300Mi", func(p *corev1.Pod) error {
		if memLimOf(p) != 300<<20 {
			return fmt.Errorf("memory limit %d", memLimOf(p))
		}
		return nil
	})
	e.kubelet(t, small, actuate)
	e.waitPod(t, small, "raise completed", func(p *corev1.Pod) error {
		if s := p.Annotations[ballastv1.ResizeStateAnnotation]; s != ballastv1.ResizeStateCompleted {
			return fmt.Errorf("resize-state %q", s)
		}
		return nil
	})
	e.clock.Step(40 * time.Second)
	if err := e.writer.AddPressure(ctx, pressureReadings(hash, ns+"/small", e.clock.Now(), 3, 60)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "at_node_limit counted", func() error {
		if n := metric(t, e.registry, "ballast_resize_raises_total", map[string]string{"trigger": "pressure", "result": "at_node_limit"}); n != 1 {
			return fmt.Errorf("at_node_limit = %v", n)
		}
		return nil
	})
	if err := e.c.Get(ctx, small, p); err != nil {
		t.Fatal(err)
	}
	if memLimOf(p) != 300<<20 {
		t.Errorf("small limit %d, want the node's 300Mi", memLimOf(p))
	}
}
