package resizeplan

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ballastk8s/ballast/pkg/sizing"
)

func lims(cpu, mem int64) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu > 0 {
		l[corev1.ResourceCPU] = mcpu(cpu)
	}
	if mem > 0 {
		l[corev1.ResourceMemory] = bytes(mem)
	}
	return l
}

func onePod(r corev1.ResourceRequirements) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: r}}}}
}

// withSpec applies changes to a copy of pod, as the accepted patch does.
func withSpec(pod *corev1.Pod, changes []sizing.ContainerChanges) *corev1.Pod {
	return sizing.WithChanges(pod, changes)
}

func TestShrunkContainers(t *testing.T) {
	pod := onePod(corev1.ResourceRequirements{Requests: lims(600, 256<<20), Limits: lims(0, 512<<20)})
	grow := []sizing.ContainerChanges{{Name: "app", Requests: lims(800, 0)}}
	if got := ShrunkContainers(pod, grow); len(got) != 0 {
		t.Fatalf("a growth recorded as a shrink: %+v", got)
	}
	cut := []sizing.ContainerChanges{{Name: "app", Requests: lims(800, 0), Limits: lims(0, 300<<20)}}
	got := ShrunkContainers(pod, cut)
	if len(got) != 1 || got[0].Limits.Memory().Value() != 512<<20 || got[0].Requests.Cpu().MilliValue() != 600 {
		t.Fatalf("pre-shrink size %+v", got)
	}
}

// TestRaiseBack: after a shrink 600m/256Mi (limit 512Mi) → 300m/200Mi (limit 256Mi), the
// raise-back restores exactly the lowered values; a value raised since stays.
func TestRaiseBack(t *testing.T) {
	pre := onePod(corev1.ResourceRequirements{Requests: lims(600, 256<<20), Limits: lims(0, 512<<20)})
	shrink := []sizing.ContainerChanges{{Name: "app", Requests: lims(300, 200<<20), Limits: lims(0, 256<<20)}}
	before := ShrunkContainers(pre, shrink)
	now := withSpec(pre, shrink)
	now.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = mcpu(900) // grown since
	back := withSpec(now, RaiseBack(now, before, "", 0))
	r := back.Spec.Containers[0].Resources
	if r.Requests.Cpu().MilliValue() != 900 || r.Requests.Memory().Value() != 256<<20 || r.Limits.Memory().Value() != 512<<20 {
		t.Fatalf("raised back to %v / %v", r.Requests, r.Limits)
	}
	// An OOM bump above the pre-shrink limit wins for that container.
	back = withSpec(now, RaiseBack(now, before, "app", 700<<20))
	if v := back.Spec.Containers[0].Resources.Limits.Memory().Value(); v != 700<<20 {
		t.Fatalf("memory limit %d, want the OOM bump", v)
	}
	if v := back.Spec.Containers[0].Resources.Requests.Memory().Value(); v != 256<<20 {
		t.Fatalf("memory request %d moved with a limit it was not equal to", v)
	}
	// Nothing left to raise: no changes.
	if ch := RaiseBack(pre, before, "", 0); len(ch) != 0 {
		t.Fatalf("changes on a pod at its pre-shrink size: %+v", ch)
	}
}

// TestRaiseBackProperties: over generated shrinks and later drifts, the raise-back never
// lowers a value, restores every lowered one, keeps request ≤ limit and the QoS class, and
// touches only the containers the shrink cut (plus the OOM-bumped one).
func TestRaiseBackProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	gen := func(base int64) int64 { return base/2 + rng.Int64N(base) + 1 }
	for iter := 0; iter < 3000; iter++ {
		var pre corev1.Pod
		for _, name := range []string{"a", "b", "c"} {
			cpu, mem := gen(1000), gen(1<<30)
			r := corev1.ResourceRequirements{Requests: lims(cpu, mem), Limits: corev1.ResourceList{}}
			switch rng.IntN(3) {
			case 0: // Guaranteed-style container
				r.Limits = lims(cpu, mem)
			case 1:
				r.Limits = lims(0, mem+gen(1<<28))
			}
			pre.Spec.Containers = append(pre.Spec.Containers, corev1.Container{Name: name, Resources: r})
		}
		var shrink []sizing.ContainerChanges
		for i, c := range pre.Spec.Containers {
			if rng.IntN(2) == 0 {
				continue
			}
			f := 0.3 + 0.6*rng.Float64()
			ch := sizing.ContainerChanges{Name: c.Name, Index: i, Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
			for res, q := range c.Resources.Requests {
				ch.Requests[res] = scaled(res, q, f)
			}
			for res, q := range c.Resources.Limits {
				ch.Limits[res] = scaled(res, q, f)
			}
			shrink = append(shrink, ch)
		}
		before := ShrunkContainers(&pre, shrink)
		now := withSpec(&pre, shrink)
		floorCtr, floor := "", int64(0)
		if rng.IntN(2) == 0 {
			floorCtr, floor = "b", gen(2<<30)
		}
		changes := RaiseBack(now, before, floorCtr, floor)
		back := withSpec(now, changes)
		if sizing.QoS(back) != sizing.QoS(now) {
			t.Fatalf("iter %d: QoS %s → %s", iter, sizing.QoS(now), sizing.QoS(back))
		}
		for i, c := range back.Spec.Containers {
			was, orig := now.Spec.Containers[i].Resources, pre.Spec.Containers[i].Resources
			cut := false
			for _, b := range before {
				cut = cut || b.Name == c.Name
			}
			for _, l := range []struct{ got, cur, pre corev1.ResourceList }{
				{c.Resources.Requests, was.Requests, orig.Requests}, {c.Resources.Limits, was.Limits, orig.Limits}} {
				for res, q := range l.cur {
					g := l.got[res]
					if g.Cmp(q) < 0 {
						t.Fatalf("iter %d: %s %s lowered %s → %s", iter, c.Name, res, q.String(), g.String())
					}
					if p := l.pre[res]; cut && g.Cmp(p) < 0 {
						t.Fatalf("iter %d: %s %s %s not back to %s", iter, c.Name, res, g.String(), p.String())
					}
					if !cut && c.Name != floorCtr && g.Cmp(q) != 0 {
						t.Fatalf("iter %d: uncut container %s changed", iter, c.Name)
					}
				}
			}
			for res, rq := range c.Resources.Requests {
				if lm, ok := c.Resources.Limits[res]; ok && rq.Cmp(lm) > 0 {
					t.Fatalf("iter %d: %s %s request %s > limit %s", iter, c.Name, res, rq.String(), lm.String())
				}
			}
		}
	}
}

func scaled(res corev1.ResourceName, q resource.Quantity, f float64) resource.Quantity {
	if res == corev1.ResourceCPU {
		return mcpu(max(1, int64(float64(q.MilliValue())*f)))
	}
	return bytes(max(1, int64(float64(q.Value())*f)))
}
