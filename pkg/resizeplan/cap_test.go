package resizeplan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func mcpu(v int64) resource.Quantity  { return *resource.NewMilliQuantity(v, resource.DecimalSI) }
func bytes(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.BinarySI) }

// genCapCase is a running pod and a growth proposal that keeps its QoS class and
// request ≤ limit, the way the calculator proposes one.
func genCapCase(rng *rand.Rand) (*corev1.Pod, []ContainerTarget) {
	guaranteed := rng.IntN(3) == 0
	pod := &corev1.Pod{}
	var ts []ContainerTarget
	for i := 0; i < 1+rng.IntN(3); i++ {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i)}
		cpu, mem := 10+rng.Int64N(2000), int64(1+rng.IntN(2048))<<20
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: mcpu(cpu), corev1.ResourceMemory: bytes(mem)}
		tcpu, tmem := cpu+rng.Int64N(3000), mem+rng.Int64N(4<<30)
		t := ContainerTarget{Name: c.Name,
			Requests: corev1.ResourceList{corev1.ResourceCPU: mcpu(tcpu), corev1.ResourceMemory: bytes(tmem)}}
		switch {
		case guaranteed:
			c.Resources.Limits = c.Resources.Requests.DeepCopy()
			t.Limits = t.Requests.DeepCopy()
		case rng.IntN(2) == 0:
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: bytes(mem * 2)}
			t.Limits = corev1.ResourceList{corev1.ResourceMemory: bytes(max(tmem, mem*2))}
			if i == 0 { // one request at its limit in a Burstable pod
				t.Limits[corev1.ResourceMemory] = bytes(tmem)
			}
		default:
			t.Limits = corev1.ResourceList{}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
		ts = append(ts, t)
	}
	return pod, ts
}

// qos is the pod QoS rule of the API (over requests and limits of cpu and memory), for
// checking the cap only.
func qos(reqs, lims []corev1.ResourceList) corev1.PodQOSClass {
	any, all := false, true
	for i := range reqs {
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			rq, okr := reqs[i][res]
			lm, okl := lims[i][res]
			any = any || okr || okl
			all = all && okl && (!okr || rq.Cmp(lm) == 0)
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case all:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func classOf(ts []ContainerTarget) corev1.PodQOSClass {
	var rq, lm []corev1.ResourceList
	for _, t := range ts {
		rq, lm = append(rq, t.Requests), append(lm, t.Limits)
	}
	return qos(rq, lm)
}

// TestCapTargetsProperties: the capped proposal fits the ceiling, keeps request ≤ limit
// and the QoS class, and never goes below the running values.
func TestCapTargetsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	capped := 0
	for iter := 0; iter < 2000; iter++ {
		pod, ts := genCapCase(rng)
		cur, want := Accounted(pod, nil), Accounted(pod, Overrides(ts))
		ceiling := Resources{MilliCPU: cur.MilliCPU + rng.Int64N(want.MilliCPU-cur.MilliCPU+1),
			Bytes: cur.Bytes + rng.Int64N(want.Bytes-cur.Bytes+1)}
		got, ok := CapTargets(pod, ts, ceiling)
		if !ok {
			t.Fatalf("iter %d: current values fit the ceiling but the cap gave up", iter)
		}
		if a := Accounted(pod, Overrides(got)); !a.Fits(ceiling) {
			t.Fatalf("iter %d: capped pod holds %+v > ceiling %+v", iter, a, ceiling)
		}
		if classOf(got) != classOf(ts) {
			t.Fatalf("iter %d: QoS %s → %s", iter, classOf(ts), classOf(got))
		}
		for i, c := range got {
			for res, rq := range c.Requests {
				if lm, ok := c.Limits[res]; ok && rq.Cmp(lm) > 0 {
					t.Fatalf("iter %d: %s %s request %s > limit %s", iter, c.Name, res, rq.String(), lm.String())
				}
				if was := pod.Spec.Containers[i].Resources.Requests[res]; rq.Cmp(was) < 0 {
					t.Fatalf("iter %d: %s %s request %s below running %s", iter, c.Name, res, rq.String(), was.String())
				}
			}
		}
		if Accounted(pod, Overrides(got)) != want {
			capped++
		}
	}
	if capped == 0 {
		t.Fatal("no generated case needed a cap")
	}
}

func TestCapTargetsNothingFits(t *testing.T) {
	pod, ts := genCapCase(rand.New(rand.NewPCG(9, 9)))
	if _, ok := CapTargets(pod, ts, Resources{}); ok {
		t.Fatal("a pod that does not fit even at its running size was capped")
	}
}
