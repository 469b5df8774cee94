package resizeplan

import (
	"math/big"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ContainerTarget is one long-running container's full proposed resources.
type ContainerTarget struct {
	Name     string
	Sidecar  bool
	Requests corev1.ResourceList
	Limits   corev1.ResourceList
}

// Overrides returns the proposed requests by container name (for Accounted).
func Overrides(ts []ContainerTarget) map[string]corev1.ResourceList {
	m := make(map[string]corev1.ResourceList, len(ts))
	for _, t := range ts {
		m[t.Name] = t.Requests
	}
	return m
}

// capSteps is the resolution of the cap's search (1/2^capSteps of the growth).
const capSteps = 16

// CapTargets is rung 4: it scales every request increase of the proposal down, per
// resource, to the largest fraction for which Planned(pod) stays within ceiling (what the
// node can ever give the pod). Requests that shrink keep their target. A request that the
// proposal sets equal to its limit keeps the limit equal (a Guaranteed pod stays
// Guaranteed); any other request only moves down while its limit stays, so request ≤ limit
// holds and no pod turns Guaranteed. ok is false when not even the current values fit
// (nothing to send).
func CapTargets(pod *corev1.Pod, ts []ContainerTarget, ceiling Resources) ([]ContainerTarget, bool) {
	cur := map[string]corev1.ResourceList{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		cur[c.Name] = c.Resources.Requests
	}
	result := cloneTargets(ts)
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		apply := func(out []ContainerTarget, num int64) {
			for i, t := range ts {
				want, ok := t.Requests[res]
				if !ok {
					continue
				}
				was := cur[t.Name][res]
				if want.Cmp(was) <= 0 {
					continue
				}
				v := interpolate(res, was, want, num)
				out[i].Requests[res] = v
				if lim, ok := t.Limits[res]; ok && lim.Cmp(want) == 0 {
					out[i].Limits[res] = v
				}
			}
		}
		fits := func(num int64) bool {
			probe := cloneTargets(result)
			apply(probe, num)
			a := Planned(pod, Overrides(probe))
			if res == corev1.ResourceCPU {
				return a.MilliCPU <= ceiling.MilliCPU
			}
			return a.Bytes <= ceiling.Bytes
		}
		if fits(1 << capSteps) {
			continue
		}
		if !fits(0) {
			return nil, false
		}
		lo, hi := int64(0), int64(1<<capSteps) // fits(lo), !fits(hi)
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if fits(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		apply(result, lo)
	}
	return result, true
}

func cloneTargets(ts []ContainerTarget) []ContainerTarget {
	out := make([]ContainerTarget, len(ts))
	for i, t := range ts {
		out[i] = ContainerTarget{Name: t.Name, Sidecar: t.Sidecar, Requests: t.Requests.DeepCopy(), Limits: t.Limits.DeepCopy()}
	}
	return out
}

// interpolate is was + (want − was) × num / 2^capSteps, truncated to whole millicores or
// bytes.
func interpolate(res corev1.ResourceName, was, want resource.Quantity, num int64) resource.Quantity {
	w, t := was.Value(), want.Value()
	if res == corev1.ResourceCPU {
		w, t = was.MilliValue(), want.MilliValue()
	}
	d := new(big.Int).Mul(big.NewInt(t-w), big.NewInt(num))
	d.Rsh(d, capSteps)
	v := w + d.Int64()
	if res == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	}
	return *resource.NewQuantity(v, resource.BinarySI)
}
