package control

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// propertyCases bounds the run (each case is a namespace, up to two objects and two
// dry-run creates); BALLAST_PROPERTY_SEED and BALLAST_PROPERTY_CASES reproduce or widen it.
const propertyCases = 150

// TestAdmissionBounds runs issue 12's admission acceptance through one API server and
// control plane.
//
// neverRejectsMore is issue 12's acceptance property, through a real API
// server whose LimitRanger, ResourceQuota and pod validation run on the patched pod: for
// random pods (one or two containers, the second sometimes a native sidecar, sometimes an
// init container) × random LimitRanges × pod-level resources × quotas, every pod the API
// server admits without Ballast (no mode label, so the webhook is not called) is admitted
// with Ballast in apply mode and a Sufficient profile (sized or unchanged). Two profiles
// pull the other way: "lo" recommends far below typical author values (tripping mins and
// ratios), "hi" far above (tripping maxes, pod-level requests and quotas).
func TestAdmissionBounds(t *testing.T) {
	began := time.Now()
	kube, err := harness.StartKube(harness.KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	e := startEnv(t, kube, srv.Valkey.URL())
	defer e.stop() // before the API server goes
	t.Run("never a new rejection", func(t *testing.T) { neverRejectsMore(t, e, began) })
	t.Run("a victim profile's absurd values are capped", func(t *testing.T) { victimProfileCapped(t, e) })
}

func neverRejectsMore(t *testing.T, e *env, began time.Time) {
	ctx := context.Background()

	seed := envInt("BALLAST_PROPERTY_SEED", 12)
	n := envInt("BALLAST_PROPERTY_CASES", propertyCases)
	t.Logf("seed %d, %d cases (BALLAST_PROPERTY_SEED, BALLAST_PROPERTY_CASES)", seed, n)

	// lo: cpu 20m, memory 40Mi/48Mi. hi: cpu 1500m, memory 600Mi/720Mi.
	e.sufficientProfile(t, "lo", 16, 40<<20)
	e.sufficientProfile(t, "hi", 1200, 600<<20)

	var admitted, sized, bounded, baselineRejected, stale int
	start := time.Now()
	t.Logf("profiles Sufficient after %s", time.Since(began).Round(time.Millisecond))
	for i := 0; i < n; i++ {
		// Draw until the API server admits the pod without Ballast (at most 8 draws):
		// only those cases test the property.
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		var c propCase
		var ns string
		var base *corev1.Pod
		ok := false
		for draw := 0; draw < 8 && !ok; draw++ {
			c = randomCase(rng)
			ns = e.namespace(t, "prop")
			c.install(t, e, ns)
			base = c.pod(ns, "")
			if err := e.c.Create(ctx, base, client.DryRunAll); err != nil {
				baselineRejected++
				continue
			}
			ok = true
		}
		if !ok {
			continue
		}
		admitted++
		with := c.pod(ns, ballastv1.ModeApply)
		if err := e.c.Create(ctx, with, client.DryRunAll); err != nil {
			// The API server's quota admission reads quotas from its own informer, which
			// can lag the status written a moment ago: when the original is now refused
			// too, the baseline was judged on a stale quota and the case tests nothing.
			if again := c.pod(ns, ""); e.c.Create(ctx, again, client.DryRunAll) != nil {
				stale++
				admitted--
				continue
			}
			t.Fatalf("case %d (seed %d): admitted without Ballast, rejected with it: %v\n%s", i, seed, err, c.dump(base))
		}
		if with.Annotations[ballastv1.ProfileRefAnnotation] == "" {
			t.Fatalf("case %d: the webhook did not stamp the pod (not called?)", i)
		}
		if hasApplied(with.Annotations) {
			sized++
		}
		if with.Annotations[ballastv1.BoundedAnnotation] != "" {
			bounded++
		}
	}
	t.Logf("%d cases in %s: %d admitted without Ballast (%d sized, %d of them bounded); %d draws rejected without Ballast; %d baselines judged on a stale quota",
		n, time.Since(start).Round(time.Millisecond), admitted, sized, bounded, baselineRejected, stale)
	// The property is only worth something when the cases exercise it.
	if sized < n/3 || bounded < n/20 {
		t.Errorf("weak coverage: %d sized, %d bounded, %d baseline rejections of %d", sized, bounded, baselineRejected, n)
	}
}

// sufficientProfile makes the profile of app "prop", component comp Sufficient with
// constant samples for containers app and side.
func (e *env) sufficientProfile(t *testing.T, comp string, milliCPU, memBytes float64) {
	t.Helper()
	ns := e.namespace(t, "prop-seed")
	seed := pod("seed", ns, "measure", "prop", comp)
	mustCreate(t, e.c, seed)
	name := seed.Annotations[ballastv1.ProfileRefAnnotation]
	wp := e.profile(t, name, "prop profile created", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.MeasurementHash == "" {
			return fmt.Errorf("no hash yet")
		}
		return nil
	})
	for _, c := range []string{"app", "side"} {
		e.writeSamples(t, wp.Status.MeasurementHash, c, series.ResourceCPU, repeat(milliCPU, 13), 20*time.Second)
		e.writeSamples(t, wp.Status.MeasurementHash, c, series.ResourceMemory, repeat(memBytes, 13), 20*time.Second)
	}
	e.clock.Step(time.Second)
	e.reconcile(t, name)
	e.profile(t, name, "prop profile Sufficient", func(wp *ballastv1.WorkloadProfile) error {
		if wp.Status.State != ballastv1.StateSufficient {
			return fmt.Errorf("state %q", wp.Status.State)
		}
		return nil
	})
}

// propCase is one random pod and the namespace objects it meets.
type propCase struct {
	profile    string
	containers []corev1.ResourceRequirements
	// sidecar makes the second container a native sidecar; init adds a run-to-completion
	// init container with these resources (both count in the API server's aggregates).
	sidecar    bool
	init       *corev1.ResourceRequirements
	podLevel   *corev1.ResourceRequirements
	limitRange *corev1.LimitRange
	quota      *corev1.ResourceQuota
	quotaUsed  corev1.ResourceList
}

var (
	cpuValues = []string{"10m", "50m", "100m", "200m", "300m", "500m", "1", "2"}
	memValues = []string{"32Mi", "64Mi", "128Mi", "256Mi", "512Mi", "1Gi"}
	// resourceValues is a slice, not a map: the draws must not depend on map order.
	resourceValues = []struct {
		res    corev1.ResourceName
		values []string
	}{{corev1.ResourceCPU, cpuValues}, {corev1.ResourceMemory, memValues}}
)

func pick(rng *rand.Rand, vs []string) resource.Quantity {
	return resource.MustParse(vs[rng.IntN(len(vs))])
}

func randomCase(rng *rand.Rand) propCase {
	c := propCase{profile: []string{"lo", "hi"}[rng.IntN(2)]}
	for range 1 + rng.IntN(2) {
		r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		for _, rv := range resourceValues {
			res, vs := rv.res, rv.values
			req, lim := pick(rng, vs), pick(rng, vs)
			if req.Cmp(lim) > 0 {
				req, lim = lim, req
			}
			switch rng.IntN(4) {
			case 0: // neither
			case 1:
				r.Requests[res] = req
			case 2:
				r.Limits[res] = lim
			default:
				r.Requests[res], r.Limits[res] = req, lim
			}
		}
		c.containers = append(c.containers, r)
	}
	c.sidecar = len(c.containers) == 2 && rng.IntN(3) == 0
	if rng.IntN(5) == 0 {
		c.init = &corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: pick(rng, cpuValues), corev1.ResourceMemory: pick(rng, memValues)}}
	}
	if rng.IntN(10) < 3 {
		// Pod-level resources at or a little above the authors' aggregate.
		pl := &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			var sum resource.Quantity
			for _, r := range c.containers {
				if q, ok := r.Requests[res]; ok {
					sum.Add(q)
				} else if q, ok := r.Limits[res]; ok {
					sum.Add(q)
				}
			}
			if rng.IntN(2) == 0 {
				sum.Add(pick(rng, map[corev1.ResourceName][]string{corev1.ResourceCPU: cpuValues, corev1.ResourceMemory: memValues}[res]))
			}
			if !sum.IsZero() {
				pl.Requests[res] = sum
			}
		}
		c.podLevel = pl
	}
	if rng.IntN(10) < 7 {
		item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: corev1.ResourceList{}, Max: corev1.ResourceList{},
			MaxLimitRequestRatio: corev1.ResourceList{}}
		for _, rv := range resourceValues {
			res, vs := rv.res, rv.values
			lo, hi := pick(rng, vs), pick(rng, vs)
			if lo.Cmp(hi) > 0 {
				lo, hi = hi, lo
			}
			if rng.IntN(2) == 0 {
				item.Min[res] = lo
			}
			if rng.IntN(2) == 0 {
				item.Max[res] = hi
			}
			if rng.IntN(3) == 0 {
				ratio := resource.MustParse([]string{"1", "1.5", "2", "4"}[rng.IntN(4)])
				mn, okMin := item.Min[res]
				mx, okMax := item.Max[res]
				// The API server refuses a ratio above max/min.
				if !okMin || !okMax || ratio.AsApproximateFloat64() <= mx.AsApproximateFloat64()/mn.AsApproximateFloat64() {
					item.MaxLimitRequestRatio[res] = ratio
				}
			}
		}
		lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
		if rng.IntN(4) == 0 {
			lr.Spec.Limits = append(lr.Spec.Limits, corev1.LimitRangeItem{Type: corev1.LimitTypePod,
				Max: corev1.ResourceList{corev1.ResourceMemory: pick(rng, memValues[2:])}})
		}
		c.limitRange = lr
	}
	if rng.IntN(2) == 0 {
		hard, used := corev1.ResourceList{}, corev1.ResourceList{}
		for _, key := range []corev1.ResourceName{corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory} {
			if rng.IntN(2) == 0 {
				continue
			}
			vs := cpuValues
			if key != corev1.ResourceRequestsCPU {
				vs = memValues
			}
			h := pick(rng, vs)
			h.Add(pick(rng, vs))
			u := pick(rng, vs)
			if u.Cmp(h) > 0 {
				u = h.DeepCopy()
			}
			hard[key], used[key] = h, u
		}
		if len(hard) > 0 {
			c.quota = &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
			c.quotaUsed = used
		}
	}
	return c
}

// install creates the case's LimitRange and quota in ns (the quota's status as the quota
// controller would keep it) and waits until the control plane's cache has them, the
// way the webhook will read them.
func (c propCase) install(t *testing.T, e *env, ns string) {
	t.Helper()
	ctx := context.Background()
	var want []client.Object
	if c.limitRange != nil {
		lr := c.limitRange.DeepCopy()
		lr.Namespace = ns
		mustCreate(t, e.c, lr)
		want = append(want, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: lr.Name, Namespace: ns}})
	}
	if c.quota != nil {
		q := c.quota.DeepCopy()
		q.Namespace = ns
		mustCreate(t, e.c, q)
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: c.quotaUsed}
		if err := e.c.Status().Update(ctx, q); err != nil {
			t.Fatal(err)
		}
		want = append(want, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: q.Name, Namespace: ns}})
	}
	for _, o := range want {
		eventually(t, 10*time.Second, "cache has "+o.GetName(), func() error {
			if err := e.app.Manager.GetCache().Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return err
			}
			if q, ok := o.(*corev1.ResourceQuota); ok && len(q.Status.Hard) == 0 {
				return fmt.Errorf("quota status not seen yet")
			}
			return nil
		})
	}
}

// pod renders the case's pod in ns; mode "" leaves the mode label off (no webhook call).
func (c propCase) pod(ns, mode string) *corev1.Pod {
	p := pod("", ns, mode, "prop", c.profile)
	p.GenerateName = "prop-"
	p.Spec.Containers = nil
	if c.init != nil {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "setup", Image: "example.invalid/app:1",
			Resources: *c.init.DeepCopy()})
	}
	for i, r := range c.containers {
		ctr := corev1.Container{Name: []string{"app", "side"}[i], Image: "example.invalid/app:1", Resources: *r.DeepCopy()}
		if i == 1 && c.sidecar {
			ctr.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			p.Spec.InitContainers = append(p.Spec.InitContainers, ctr)
			continue
		}
		p.Spec.Containers = append(p.Spec.Containers, ctr)
	}
	if c.podLevel != nil {
		p.Spec.Resources = c.podLevel.DeepCopy()
	}
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	return p
}

func (c propCase) dump(p *corev1.Pod) string {
	out, _ := yaml.Marshal(map[string]any{"profile": c.profile, "podSpec": p.Spec, "limitRange": c.limitRange,
		"sidecar": c.sidecar,
		"quota":   c.quota, "quotaUsed": c.quotaUsed})
	return string(out)
}

func hasApplied(ann map[string]string) bool {
	for k := range ann {
		if strings.HasPrefix(k, ballastv1.Prefix+"applied-") {
			return true
		}
	}
	return false
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
