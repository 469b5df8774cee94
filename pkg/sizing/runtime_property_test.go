package sizing

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/sizing/memfloor"
)

// Over random pods with random jvm/go options, runtimes and pod-level resources: every
// written container keeps request ≤ limit; the QoS class of a Burstable or Guaranteed pod
// never changes; a jvm resize never lowers a memory value; a pod-level write keeps the pod
// valid (aggregate requests ≤ pod request ≤ pod limit, container limits ≤ pod limit).
func TestRuntimeAndPodLevelProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 4))
	opts := []string{"-Xmx64m", "-Xmx100m", "-XX:MaxRAMPercentage=75", "-Xmx1g", ""}
	runtimes := []memfloor.Runtime{memfloor.JVM, memfloor.Go, memfloor.Auto, memfloor.Generic}
	for i := range iterations(3000) {
		s := randomScenario(r)
		for ci := range s.pod.Spec.Containers {
			switch r.IntN(3) {
			case 0:
				s.pod.Spec.Containers[ci].Env = []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: opts[r.IntN(len(opts))]}}
			case 1:
				s.pod.Spec.Containers[ci].Env = []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: []string{"64MiB", "100MiB", "off"}[r.IntN(3)]}}
			}
		}
		if r.IntN(2) == 0 {
			// Pod-level values that hold the containers as written.
			agg := aggregate(s.pod, requestsOf)
			pr := &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
			for _, res := range podLevelResources {
				if q, ok := agg[res]; ok && r.IntN(2) == 0 {
					pr.Requests[res] = q.DeepCopy()
				}
				if m, ok := largestLimit(s.pod, res); ok && r.IntN(2) == 0 {
					l := aggregate(s.pod, limitsOf)[res]
					if q, ok := agg[res]; ok && q.Cmp(l) > 0 {
						l = q.DeepCopy()
					}
					if l.Cmp(m) < 0 {
						l = m
					}
					pr.Limits[res] = l
					if q, ok := pr.Requests[res]; ok && q.Cmp(l) > 0 {
						pr.Requests[res] = l.DeepCopy()
					}
				}
			}
			s.pod.Spec.Resources = pr
		}
		p := Params{Managed: s.managed, Runtime: RuntimeParams{Type: runtimes[r.IntN(len(runtimes))]},
			PodLevel: []string{PodLevelKeep, PodLevelSize}[r.IntN(2)], PodLevelInPlace: r.IntN(2) == 0}
		for _, stepping := range []Stepping{AtOnce, Stepped} {
			plan := Calculate(s.pod, s.recs, p, stepping)
			changes := AdmissionResult(plan).Changes
			if stepping == Stepped {
				// What resize would send: nothing when its checks skip the pod.
				d := ResizeOf(plan)
				if d.Reason != "" {
					continue
				}
				changes = d.Changes
			}
			after := WithChanges(s.pod, changes)
			if plan.Pod != nil && plan.Pod.Changed && (stepping == AtOnce && len(changes) > 0 || stepping == Stepped) {
				after.Spec.Resources = &corev1.ResourceRequirements{Requests: plan.Pod.Requests, Limits: plan.Pod.Limits}
			}
			for _, c := range allContainers(after) {
				for res, req := range c.Resources.Requests {
					if lim, ok := c.Resources.Limits[res]; ok && !lim.IsZero() && req.Cmp(lim) > 0 {
						t.Fatalf("iteration %d stepping %d params %+v: %s %s request %s > limit %s\nplan %+v\n%s", i, stepping, p, c.Name, res, req.String(), lim.String(), plan, s)
					}
				}
			}
			before := QoS(s.pod)
			if before != corev1.PodQOSBestEffort && QoS(after) != before {
				t.Fatalf("iteration %d stepping %d: QoS %s → %s\n%s", i, stepping, before, QoS(after), s)
			}
			if pr := after.Spec.Resources; pr != nil && (stepping == AtOnce || p.PodLevelInPlace || p.PodLevel == PodLevelKeep) {
				all := map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}
				if vs := podResourceChecks(after, after, aggregate(after, requestsOf), all); len(vs) > 0 && len(violations(s.pod, nil, Bounds{})) == 0 {
					// The original pod was valid (built so): the sized one must be too.
					t.Fatalf("iteration %d stepping %d podLevel %s: %s\n%s", i, stepping, p.PodLevel, vs[0].why, s)
				}
			}
			if stepping == Stepped && p.Runtime.Type == memfloor.JVM {
				for _, ch := range changes {
					c := refOf(ch).Container(&s.pod.Spec)
					for _, l := range []struct{ old, new corev1.ResourceList }{{c.Resources.Requests, ch.Requests}, {c.Resources.Limits, ch.Limits}} {
						o, ok1 := l.old[corev1.ResourceMemory]
						n, ok2 := l.new[corev1.ResourceMemory]
						if ok1 && ok2 && n.Cmp(o) < 0 {
							t.Fatalf("iteration %d: jvm memory shrunk in place %s → %s\n%s", i, o.String(), n.String(), s)
						}
					}
				}
			}
		}
	}
}
