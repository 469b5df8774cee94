package sizing

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Property tests over random pods and recommendations. Values come from small sets so
// that equal requests and limits, clamps and step-downs happen often. The generator is
// seeded, so a failure reproduces; the failing iteration prints its pod and inputs.

var valuePool = map[corev1.ResourceName][]string{
	corev1.ResourceCPU:              {"1m", "50m", "100m", "199m", "200m", "500m", "1", "2"},
	corev1.ResourceMemory:           {"1", "64Mi", "100Mi", "128Mi", "134217727", "149Mi", "256Mi", "1Gi"},
	corev1.ResourceEphemeralStorage: {"500Mi", "1Gi", "2Gi"},
}

func pick(r *rand.Rand, res corev1.ResourceName) resource.Quantity {
	pool := valuePool[res]
	return resource.MustParse(pool[r.IntN(len(pool))])
}

// randomResources returns valid, API-defaulted requirements (request ≤ limit; a limit
// always has a request). guaranteed makes cpu and memory request == limit.
func randomResources(r *rand.Rand, guaranteed bool) corev1.ResourceRequirements {
	var rr corev1.ResourceRequirements
	for _, res := range recommendedResources {
		a, b := pick(r, res), pick(r, res)
		if a.Cmp(b) > 0 {
			a, b = b, a
		}
		shape := r.IntN(5)
		if guaranteed && resizable(res) {
			shape, a = 4, b
		}
		switch shape {
		case 1: // request only
			rr.Requests = merged(rr.Requests, corev1.ResourceList{res: a})
		case 2, 3, 4: // request and limit (equal when a == b)
			rr.Requests = merged(rr.Requests, corev1.ResourceList{res: a})
			rr.Limits = merged(rr.Limits, corev1.ResourceList{res: b})
		}
	}
	return rr
}

func randomRecommendation(r *rand.Rand, res corev1.ResourceName) ResourceRecommendation {
	var out ResourceRecommendation
	if r.IntN(3) > 0 {
		out.Request, out.HasRequest = UnitsOf(res, pick(r, res)), true
	}
	if r.IntN(2) == 0 {
		out.Limit, out.HasLimit = UnitsOf(res, pick(r, res)), true
	}
	return out
}

type scenario struct {
	pod     *corev1.Pod
	recs    Recommendations
	managed Managed
}

func (s scenario) String() string {
	b, _ := json.Marshal(s.pod.Spec)
	return fmt.Sprintf("pod spec %s\nrecs %v\nmanaged %v", b, s.recs, s.managed)
}

func randomScenario(r *rand.Rand) scenario {
	guaranteed := r.IntN(3) == 0
	p := &corev1.Pod{}
	var names []string
	for i := range 1 + r.IntN(3) {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Resources: randomResources(r, guaranteed)}
		p.Spec.Containers = append(p.Spec.Containers, c)
		names = append(names, c.Name)
	}
	for i := range r.IntN(3) {
		c := corev1.Container{Name: fmt.Sprintf("i%d", i), Resources: randomResources(r, guaranteed)}
		if r.IntN(2) == 0 {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		names = append(names, c.Name)
	}
	if r.IntN(3) == 0 {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e0"}}}
		names = append(names, "e0")
	}
	if r.IntN(4) == 0 {
		p.Annotations = map[string]string{"team": "shop"}
	}
	recs := Recommendations{}
	for _, n := range append(names, "unknown") {
		if r.IntN(4) == 0 {
			continue
		}
		recs[n] = map[corev1.ResourceName]ResourceRecommendation{}
		for _, res := range recommendedResources {
			if r.IntN(3) > 0 {
				recs[n][res] = randomRecommendation(r, res)
			}
		}
	}
	managed := allManaged()
	if r.IntN(2) == 0 {
		managed = Managed{}
		for _, res := range recommendedResources {
			for _, f := range []Field{Request, Limit} {
				if r.IntN(2) == 0 {
					managed[Target{res, f}] = true
				}
			}
		}
	}
	return scenario{pod: p, recs: recs, managed: managed}
}

// diff is cmp.Diff behind a fast semantic equality check (cmp over whole pods is slow).
func diff(want, got any) string {
	if equality.Semantic.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got, cmpOpts...)
}

// iterations is n, or a tenth of it under -short.
func iterations(n int) int {
	if testing.Short() {
		return n / 10
	}
	return n
}

// checkRequestsWithinLimits fails when any container requests more than its limit.
func checkRequestsWithinLimits(t *testing.T, p *corev1.Pod) {
	t.Helper()
	all := append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...)
	for _, c := range all {
		for res, lim := range c.Resources.Limits {
			if req, ok := c.Resources.Requests[res]; ok && !lim.IsZero() && req.Cmp(lim) > 0 {
				t.Fatalf("container %s: %s request %s > limit %s", c.Name, res, req.String(), lim.String())
			}
		}
	}
}

// checkUntouched fails when run-to-completion init or ephemeral containers changed.
func checkUntouched(t *testing.T, before, after *corev1.Pod) {
	t.Helper()
	for i, c := range before.Spec.InitContainers {
		if !IsSidecar(&c) {
			if d := diff(c, after.Spec.InitContainers[i]); d != "" {
				t.Fatalf("run-to-completion init container %s changed:\n%s", c.Name, d)
			}
		}
	}
	if d := diff(before.Spec.EphemeralContainers, after.Spec.EphemeralContainers); d != "" {
		t.Fatalf("ephemeral containers changed:\n%s", d)
	}
}

func TestAdmissionProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	for i := range iterations(2000) {
		s := randomScenario(r)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Log(s)
				}
			}()
			orig := s.pod.DeepCopy()
			res := Admission(s.pod, s.recs, Params{Managed: s.managed})
			if d := diff(orig, s.pod); d != "" {
				t.Fatalf("input pod modified:\n%s", d)
			}
			if (len(res.Changes) == 0) != (res.SkipReason != "") {
				t.Fatalf("changes %v with skip reason %q", res.Changes, res.SkipReason)
			}
			for _, ch := range res.Changes {
				c := refOf(ch).Container(&s.pod.Spec)
				if c == nil || (ch.Sidecar && !IsSidecar(c)) {
					t.Fatalf("change for a container that is not long-running: %+v", ch)
				}
				for res, v := range ch.Requests {
					if cur, ok := c.Resources.Requests[res]; ok && cur.Cmp(v) == 0 {
						t.Fatalf("container %s: %s request rewritten with its own value %s", c.Name, res, v.String())
					}
				}
			}

			// Apply through the rendered JSON patch, as the API server would.
			ops, err := JSONPatch(s.pod, res, nil)
			if err != nil {
				t.Fatal(err)
			}
			doc, _ := json.Marshal(s.pod)
			patched, err := applyJSONPatch(doc, ops)
			if err != nil {
				t.Fatalf("patch does not apply: %v", err)
			}
			var got corev1.Pod
			if err := json.Unmarshal(patched, &got); err != nil {
				t.Fatal(err)
			}
			if d := diff(expectedAfter(s.pod, res, nil), &got); d != "" {
				t.Fatalf("patched pod differs from the result:\n%s", d)
			}
			after := WithChanges(&got, nil) // API server defaulting
			checkRequestsWithinLimits(t, after)
			checkUntouched(t, s.pod, after)
			if before := QoS(s.pod); before != corev1.PodQOSBestEffort {
				if now := QoS(after); now != before {
					t.Fatalf("QoS changed from %s to %s", before, now)
				}
			}
		})
		if t.Failed() {
			return
		}
	}
}

func TestResizeProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 3))
	thresholds := []float64{0, 5, 10, 20}
	caps := []float64{25, 50, 100, 150}
	for i := range iterations(1000) {
		s := randomScenario(r)
		maxChange := caps[r.IntN(len(caps))]
		thr := thresholds[r.IntN(len(thresholds))]
		set := settings(s.managed, thr, maxChange)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("%s\nthreshold %v cap %v", s, thr, maxChange)
				}
			}()
			p := s.pod
			for cycle := 0; ; cycle++ {
				if cycle == 100 {
					t.Fatalf("no convergence after 100 cycles")
				}
				d := Resize(p, s.recs, set)
				if d.Reason != "" {
					if len(d.Changes) > 0 {
						t.Fatalf("skip %q with changes", d.Reason)
					}
					return
				}
				if len(d.Changes) == 0 {
					t.Fatalf("patch decision without changes")
				}
				for _, ch := range d.Changes {
					for _, list := range []corev1.ResourceList{ch.Requests, ch.Limits} {
						for res := range list {
							if !resizable(res) {
								t.Fatalf("resize changes %s", res)
							}
						}
					}
				}
				body, err := ResizePatch(p, d.Changes)
				if err != nil {
					t.Fatal(err)
				}
				next := applyResizePatch(t, p, body)
				if dd := diff(expectedAfter(p, Result{Changes: d.Changes}, nil), next); dd != "" {
					t.Fatalf("cycle %d: patched pod differs from the decision:\n%s", cycle, dd)
				}
				next = WithChanges(next, nil)
				checkRequestsWithinLimits(t, next)
				checkUntouched(t, p, next)
				if before, after := QoS(p), QoS(next); before != after {
					t.Fatalf("cycle %d: QoS changed from %s to %s", cycle, before, after)
				}
				p = next
			}
		})
		if t.Failed() {
			return
		}
	}
}
