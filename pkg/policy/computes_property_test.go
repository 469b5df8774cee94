package policy_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/recommend"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// "A policy that validates always computes" (issue 9): over generated specs, Compile
// succeeds exactly when Validate says Valid (with the same reason and message when not),
// and a compiled policy always goes through recommend and sizing without a policy
// failure. Every string field is drawn blank (as the CRD schema admits), valid or
// invalid, so valid and invalid policies are both common. The generator is seeded; a
// failing spec is printed as YAML.

// pool is the values of one field: valid ones and invalid ones (the blank is drawn
// separately).
type pool struct{ valid, invalid []string }

var (
	resources    = pool{[]string{"cpu", "memory", "ephemeral-storage"}, []string{"nvidia.com/gpu"}}
	fields       = pool{[]string{"request", "limit"}, []string{"both"}}
	aggregations = pool{[]string{"p50", "p75", "p90", "p95", "p99", "max", "avg"}, []string{"p42"}}
	headrooms    = pool{[]string{"1", "1.0", "1.25", ".5", "3."}, []string{"0", "-1", "120%", "1e3", "x"}}
	durations    = pool{[]string{"30s", "15m", "24h", "1h30m"}, []string{"0s", "-1h", "24", "soon"}}
	maxCVs       = pool{[]string{"0", "1.5", "2.", "0.25"}, []string{"-0.5", "lots", "1e1"}}
	floors       = pool{[]string{"0", "25m", "0.5", "25Mi", "2Mi", "1e3", "1.5Gi"}, []string{"-1Mi", "lots", "5 Mi"}}
	percentages  = pool{[]string{"10%", "5", "12.5%", "100%", "250%", ".1"}, []string{"0%", "0", "-3", "%", "ten"}}
	maxChanges   = pool{[]string{"50%", "25", "100%", "0.5", "1"}, []string{"0%", "150%", "-5", "x"}}
	patterns     = pool{[]string{"", "prod", "/team-.*/", "//"}, []string{"/(/", "/[a-/"}}
)

// draw picks a value of p: blank a third of the time (so every blank meets every other
// value), an invalid value one time in eighteen, else a valid one.
func draw(r *rand.Rand, p pool) string {
	switch {
	case r.IntN(3) == 0:
		return ""
	case r.IntN(6) == 0:
		return p.invalid[r.IntN(len(p.invalid))]
	default:
		return p.valid[r.IntN(len(p.valid))]
	}
}

// must picks a value of a required field (no blank).
func must(r *rand.Rand, p pool) string {
	if r.IntN(20) == 0 {
		return p.invalid[r.IntN(len(p.invalid))]
	}
	return p.valid[r.IntN(len(p.valid))]
}

// randomSpec draws a spec.
func randomSpec(r *rand.Rand) ballastv1.ResourcePolicySpec {
	var s ballastv1.ResourcePolicySpec
	s.Priority = int32(r.IntN(3))
	if r.IntN(4) == 0 {
		s.Selector.Namespaces.Include = []string{must(r, patterns)}
	}
	if r.IntN(4) == 0 {
		s.Selector.Annotations = map[string]string{"team": must(r, patterns)}
	}
	for range r.IntN(4) {
		s.Metrics = append(s.Metrics, ballastv1.MetricSpec{
			Resource: must(r, resources), Field: must(r, fields), Source: "kubernetes-metrics",
			Aggregation: must(r, aggregations), Headroom: draw(r, headrooms),
		})
	}
	s.Readiness.MinDataPoints = []int64{0, 1, 250}[r.IntN(3)]
	s.Readiness.MinTimeSpan = draw(r, durations)
	s.Readiness.MaxCV = draw(r, maxCVs)
	switch r.IntN(3) {
	case 0: // absent: the built-in floors
	case 1:
		s.Readiness.CVMeanFloor = map[string]string{}
	default:
		s.Readiness.CVMeanFloor = map[string]string{}
		for _, res := range resources.valid {
			if r.IntN(2) == 0 {
				s.Readiness.CVMeanFloor[res] = draw(r, floors)
			}
		}
	}
	th := &s.Behaviors.Thresholds
	th.Default, th.Resize.Default = draw(r, percentages), draw(r, percentages)
	if r.IntN(2) == 0 {
		th.Resize.ResourceThresholds = map[string]ballastv1.FieldThresholds{}
		for _, res := range resources.valid {
			if r.IntN(2) == 0 {
				th.Resize.ResourceThresholds[res] = ballastv1.FieldThresholds{
					Request: draw(r, percentages), Limit: draw(r, percentages)}
			}
		}
	}
	s.Behaviors.Resize.MaxChangePerCycle = draw(r, maxChanges)
	s.Behaviors.Resize.Interval = draw(r, durations)
	return s
}

func TestValidPoliciesAlwaysCompute(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 2026))
	n := 3000
	if testing.Short() {
		n = 300
	}
	valid := 0
	for i := range n {
		spec := randomSpec(r)
		if checkComputes(t, fmt.Sprint(i), spec) {
			valid++
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d of %d generated policies valid", valid, n)
	// Both outcomes must be common, or the property says little.
	if valid < n/10 || valid > n*9/10 {
		t.Errorf("%d of %d generated policies valid; the pools no longer exercise both sides", valid, n)
	}
}

// TestEveryBlankComputes sets, one at a time, each string field of a full valid policy to
// the blank the schema admits: each must validate and compute (SPEC §3.3: blank values
// are not errors, they take their resolve-time defaults).
func TestEveryBlankComputes(t *testing.T) {
	blanks := map[string]func(*ballastv1.ResourcePolicySpec){
		"metrics[].headroom":      func(s *ballastv1.ResourcePolicySpec) { s.Metrics[0].Headroom = "" },
		"readiness.minTimeSpan":   func(s *ballastv1.ResourcePolicySpec) { s.Readiness.MinTimeSpan = "" },
		"readiness.maxCV":         func(s *ballastv1.ResourcePolicySpec) { s.Readiness.MaxCV = "" },
		"readiness.cvMeanFloor":   func(s *ballastv1.ResourcePolicySpec) { s.Readiness.CVMeanFloor = nil },
		"readiness.cvMeanFloor{}": func(s *ballastv1.ResourcePolicySpec) { s.Readiness.CVMeanFloor = map[string]string{} },
		"readiness.cvMeanFloor[cpu]": func(s *ballastv1.ResourcePolicySpec) {
			s.Readiness.CVMeanFloor = map[string]string{"cpu": ""}
		},
		"readiness.cvMeanFloor[every resource]": func(s *ballastv1.ResourcePolicySpec) {
			s.Readiness.CVMeanFloor = map[string]string{"cpu": "", "memory": "", "ephemeral-storage": ""}
		},
		"readiness.minDataPoints": func(s *ballastv1.ResourcePolicySpec) { s.Readiness.MinDataPoints = 0 },
		"behaviors.thresholds.default": func(s *ballastv1.ResourcePolicySpec) {
			s.Behaviors.Thresholds.Default = ""
		},
		"behaviors.thresholds.resize.default": func(s *ballastv1.ResourcePolicySpec) {
			s.Behaviors.Thresholds.Resize.Default = ""
		},
		"behaviors.thresholds.resize.resourceThresholds[cpu]": func(s *ballastv1.ResourcePolicySpec) {
			s.Behaviors.Thresholds.Resize.ResourceThresholds["cpu"] = ballastv1.FieldThresholds{}
		},
		"behaviors.resize.maxChangePerCycle": func(s *ballastv1.ResourcePolicySpec) {
			s.Behaviors.Resize.MaxChangePerCycle = ""
		},
		"behaviors.resize.interval": func(s *ballastv1.ResourcePolicySpec) { s.Behaviors.Resize.Interval = "" },
		"selector.namespaces.include[0]": func(s *ballastv1.ResourcePolicySpec) {
			s.Selector.Namespaces.Include = []string{""}
		},
		"selector.annotations[team]": func(s *ballastv1.ResourcePolicySpec) {
			s.Selector.Annotations = map[string]string{"team": ""}
		},
		"everything at once": func(s *ballastv1.ResourcePolicySpec) { *s = ballastv1.ResourcePolicySpec{} },
	}
	for name, blank := range blanks {
		t.Run(name, func(t *testing.T) {
			spec := fullSpec()
			blank(&spec)
			if ok, reason, msg := policy.Validate(ballastv1.KindClusterResourcePolicy, spec, policy.Floors{}); !ok {
				t.Fatalf("Validate = %s: %s, want Valid", reason, msg)
			}
			checkComputes(t, name, spec)
		})
	}
}

// fullSpec writes every field.
func fullSpec() ballastv1.ResourcePolicySpec {
	return ballastv1.ResourcePolicySpec{
		Selector: ballastv1.PolicySelector{Namespaces: ballastv1.NamespaceSelector{Include: []string{"/.*/"}}},
		Metrics: []ballastv1.MetricSpec{
			{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
			{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75", Headroom: "1.0"},
			{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
			{Resource: "ephemeral-storage", Field: "request", Source: "kubelet-summary", Aggregation: "p90", Headroom: "1"},
		},
		Readiness: ballastv1.Readiness{MinDataPoints: 10, MinTimeSpan: "1h", MaxCV: "1.5",
			CVMeanFloor: map[string]string{"cpu": "25m", "memory": "25Mi", "ephemeral-storage": "2Mi"}},
		Behaviors: ballastv1.Behaviors{
			Thresholds: ballastv1.Thresholds{Default: "10%", Resize: ballastv1.ResizeThresholds{Default: "15%",
				ResourceThresholds: map[string]ballastv1.FieldThresholds{"cpu": {Request: "5%", Limit: "20%"}}}},
			Resize: ballastv1.ResizeBehavior{MaxChangePerCycle: "50%", Interval: "15m"},
		},
	}
}

// checkComputes asserts the property for one spec and reports whether it is valid.
func checkComputes(t *testing.T, name string, spec ballastv1.ResourcePolicySpec) bool {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		y, _ := yaml.Marshal(spec)
		t.Errorf("%s: "+format+"\nspec:\n%s", append([]any{name}, append(args, y)...)...)
	}
	ok, reason, msg := policy.Validate(ballastv1.KindClusterResourcePolicy, spec, policy.Floors{})
	c, err := policy.Compile(ballastv1.KindClusterResourcePolicy, "", "p", 1, spec, policy.Floors{})
	switch {
	case ok && err != nil:
		fail("Validate says Valid but Compile fails: %v", err)
		return false
	case !ok && err == nil:
		fail("Validate says %s (%s) but Compile succeeds", reason, msg)
		return false
	case !ok:
		if verr, isV := err.(*policy.ValidationError); !isV || verr.Reason != reason || verr.Message != msg {
			fail("Compile error %v differs from Validate's %s: %s", err, reason, msg)
		}
		return false
	}

	// recommend: every considered (container, resource) is either ready with a
	// recommendation or pending for a data reason — never for the policy.
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	res := recommend.Compute(recommend.Input{Now: now, Policy: c, SamplingInterval: 10 * time.Second,
		Retention: 168 * time.Hour, Generation: 1, Containers: []recommend.ContainerInput{
			{Name: "app", Series: map[string]recommend.Distribution{
				"cpu": steady{n: 2000, v: 240, span: 48 * time.Hour, now: now}, "memory": steady{n: 2000, v: 200 << 20, span: 48 * time.Hour, now: now},
				"ephemeral-storage": steady{n: 2000, v: 1 << 30, span: 48 * time.Hour, now: now}}},
			{Name: "young", Series: map[string]recommend.Distribution{"cpu": steady{n: 3, v: 5, span: time.Minute, now: now}}},
		}})
	for _, p := range res.Pending {
		if p.Reason == recommend.NotReadyInvalidStatistic || p.Reason == "" {
			fail("pending %s/%s for %q: %s", p.Container, p.Resource, p.Reason, p.Message)
		}
	}
	if res.Ready.Reason == ballastv1.ReasonPolicyInvalid {
		fail("a compiled policy made the profile PolicyInvalid: %s", res.Ready.Message)
	}
	named := map[string]bool{}
	for _, m := range c.Metrics {
		named[m.Resource] = true
	}
	for _, cp := range res.Containers {
		if cp.Name != "app" {
			continue
		}
		for r := range named {
			if _, ok := cp.Recommendations[r]; !ok && !slices.ContainsFunc(res.Pending, func(p recommend.Pending) bool {
				return p.Container == "app" && p.Resource == r
			}) {
				fail("app/%s is neither recommended nor pending", r)
			}
		}
	}

	// sizing: the parameters are usable and both renderers run on them.
	params := sizing.ParamsFor(c)
	for target, d := range params.Thresholds {
		if d.Sign() <= 0 {
			fail("threshold of %v is %s, not > 0", target, d)
		}
	}
	if params.MaxChangePerCycle.Sign() <= 0 || params.MaxChangePerCycle.CmpInt64(100) > 0 {
		fail("maxChangePerCycle %s outside (0, 100]", params.MaxChangePerCycle)
	}
	if c.Resize.Interval <= 0 || c.Readiness.MinTimeSpan <= 0 || c.Readiness.MinDataPoints <= 0 {
		fail("resolve-time defaults missing: interval %s, minTimeSpan %s, minDataPoints %d",
			c.Resize.Interval, c.Readiness.MinTimeSpan, c.Readiness.MinDataPoints)
	}
	recs, problems := sizing.ParseRecommendations(res.Containers)
	if len(problems) > 0 {
		fail("recommendations computed under the policy do not parse: %v", problems)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-0", Namespace: "shop"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{"memory": resource.MustParse("256Mi")},
		}}}}}
	adm := sizing.Admission(pod, recs, params)
	if _, err := sizing.JSONPatch(pod, adm, nil); err != nil {
		fail("admission patch: %v", err)
	}
	if d := sizing.Resize(pod, recs, params); d.Reason == "" {
		if _, err := sizing.ResizePatch(pod, d.Changes); err != nil {
			fail("resize patch: %v", err)
		}
	}
	return true
}

// steady is n samples of the constant v spread over span ending at now.
type steady struct {
	n    int64
	v    float64
	span time.Duration
	now  time.Time
}

func (s steady) Count() int64             { return s.n }
func (s steady) Sum() float64             { return float64(s.n) * s.v }
func (s steady) SumSquares() float64      { return float64(s.n) * s.v * s.v }
func (s steady) Max() float64             { return s.v }
func (s steady) Quantile(float64) float64 { return s.v }
func (s steady) FirstSeen() time.Time     { return s.now.Add(-s.span) }
func (s steady) LastSeen() time.Time      { return s.now }
