package sizing

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/policy"
)

// settings builds calculator params with one threshold for every (resource, field).
func settings(managed Managed, thresholdPct, maxPct float64) Params {
	p := Params{Managed: managed, Thresholds: map[Target]policy.Decimal{}, MaxChangePerCycle: pct(maxPct)}
	for _, res := range recommendedResources {
		for _, f := range [...]Field{Request, Limit} {
			p.Thresholds[Target{res, f}] = pct(thresholdPct)
		}
	}
	return p
}

// pct is a percentage as the policy package parses it.
func pct(v float64) policy.Decimal {
	d, err := policy.ParseDecimal(strconv.FormatFloat(v, 'f', -1, 64))
	if err != nil {
		panic(err)
	}
	return d
}

// TestResizeExamples runs the worked examples of SPEC §8.3 cycle by cycle: each cycle's
// patch is applied to the pod before the next one is computed.
func TestResizeExamples(t *testing.T) {
	type cycle struct {
		requests, limits corev1.ResourceList
		clamps           []Clamp
	}
	cases := map[string]struct {
		pod      *corev1.Pod
		recs     Recommendations
		settings Params
		cycles   []cycle
		final    string // reason once converged
	}{
		// cap 50%, threshold 10%: 100m → 300m → 400m → 450m (|500−450|/450 = 11.1% > 10%)
		// → 500m (475m snaps: |500−475|/475 = 5.3% ≤ 10%).
		"§8.3 cpu 100m toward 500m converges in four cycles": {
			pod:      pod(container("app").req("cpu", "100m")).obj(),
			recs:     Recommendations{"app": {"cpu": rec("cpu", "500m", "")}},
			settings: settings(defaultManaged(), 10, 50),
			cycles: []cycle{
				{requests: rl("cpu", "300m")}, {requests: rl("cpu", "400m")},
				{requests: rl("cpu", "450m")}, {requests: rl("cpu", "500m")},
			},
			final: ReasonNoDrift,
		},
		// threshold 20%, cap 50%: the limit 256Mi (268435456) steps toward 100Mi to
		// 178Mi = 186646528 bytes (|100−178|/178 = 43.8%, no snap). The request's
		// recommendation 190Mi is clamped to that limit; its drift from 200Mi to 178Mi is
		// 11% < 20%, yet the request is bounded by the patched limit: 186646528 bytes.
		// Next cycles: limit 178Mi → 139Mi = 145752064 (|100−139|/139 = 28% > 20%), request
		// clamped and snapped to it; then 119.5Mi snaps (16.3% ≤ 20%) to 100Mi = 104857600.
		"§8.3 memory limit 256Mi toward 100Mi holds the 200Mi request at the stepped limit": {
			pod:      pod(container("app").req("memory", "200Mi").lim("memory", "256Mi")).obj(),
			recs:     Recommendations{"app": {"memory": rec("memory", "190Mi", "100Mi")}},
			settings: settings(defaultManaged(), 20, 50),
			cycles: []cycle{
				{requests: rl("memory", "186646528"), limits: rl("memory", "186646528"),
					clamps: []Clamp{clamp("app", "memory", "190Mi", "178Mi", "178Mi")}},
				{requests: rl("memory", "145752064"), limits: rl("memory", "145752064"),
					clamps: []Clamp{clamp("app", "memory", "190Mi", "139Mi", "139Mi")}},
				{requests: rl("memory", "104857600"), limits: rl("memory", "104857600"),
					clamps: []Clamp{clamp("app", "memory", "190Mi", "100Mi", "100Mi")}},
			},
			final: ReasonClampedAtLimit,
		},
		// Growing toward the limit of a pod that equal requests would make Guaranteed:
		// 150m, 175m, then 187m would snap to 200m = the limit, so the target becomes 199m.
		"a request growing onto its limit steps down one unit on the final cycle": {
			pod:      pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "200m", "memory", "128Mi")).obj(),
			recs:     Recommendations{"app": {"cpu": rec("cpu", "200m", "")}},
			settings: settings(defaultManaged(), 10, 50),
			cycles:   []cycle{{requests: rl("cpu", "150m")}, {requests: rl("cpu", "175m")}, {requests: rl("cpu", "199m")}},
			final:    ReasonNoDrift,
		},
		"a native sidecar is resized in spec.initContainers": {
			pod: pod(container("app")).init(container("migrate").req("cpu", "1"),
				container("proxy").always().req("cpu", "10m")).obj(),
			recs:     Recommendations{"proxy": {"cpu": rec("cpu", "15m", "")}, "migrate": {"cpu": rec("cpu", "50m", "")}},
			settings: settings(defaultManaged(), 10, 100),
			cycles:   []cycle{{requests: rl("cpu", "15m")}},
			final:    ReasonNoDrift,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.pod
			for i, want := range tc.cycles {
				d := Resize(p, tc.recs, tc.settings)
				if d.Reason != "" || len(d.Changes) != 1 {
					t.Fatalf("cycle %d: reason %q (%s), %d changes; want one container patched", i+1, d.Reason, d.Message, len(d.Changes))
				}
				got := d.Changes[0]
				if diff := cmp.Diff(want.requests, got.Requests, cmpOpts...); diff != "" {
					t.Errorf("cycle %d requests (-want +got):\n%s", i+1, diff)
				}
				if diff := cmp.Diff(want.limits, got.Limits, cmpOpts...); diff != "" {
					t.Errorf("cycle %d limits (-want +got):\n%s", i+1, diff)
				}
				if diff := cmp.Diff(want.clamps, d.Clamps, cmpOpts...); diff != "" {
					t.Errorf("cycle %d clamps (-want +got):\n%s", i+1, diff)
				}
				p = WithChanges(p, d.Changes)
			}
			if d := Resize(p, tc.recs, tc.settings); d.Reason != tc.final {
				t.Errorf("after %d cycles: reason %q (%s), want %q", len(tc.cycles), d.Reason, d.Message, tc.final)
			}
		})
	}
}

// TestResizeReasons covers steps 4 and 5 of SPEC §8.2.
func TestResizeReasons(t *testing.T) {
	guaranteed := func() *ctrBuilder {
		return container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi")
	}
	cases := map[string]struct {
		pod        *corev1.Pod
		recs       Recommendations
		wantReason string
		wantQoS    [2]corev1.PodQOSClass
	}{
		"a gap within the threshold is no drift": {
			pod:        pod(container("app").req("cpu", "100m")).obj(),
			recs:       Recommendations{"app": {"cpu": rec("cpu", "109m", "")}},
			wantReason: ReasonNoDrift,
			wantQoS:    [2]corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBurstable},
		},
		"a gap of exactly the threshold is no drift": {
			pod:        pod(container("app").req("cpu", "100m")).obj(),
			recs:       Recommendations{"app": {"cpu": rec("cpu", "110m", "")}},
			wantReason: ReasonNoDrift,
			wantQoS:    [2]corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBurstable},
		},
		"only ephemeral-storage drifted: not resizable": {
			pod:        pod(container("app").req("cpu", "100m", "ephemeral-storage", "500Mi")).obj(),
			recs:       Recommendations{"app": {"cpu": rec("cpu", "100m", ""), "ephemeral-storage": rec("ephemeral-storage", "2Gi", "")}},
			wantReason: ReasonNotResizable,
			wantQoS:    [2]corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBurstable},
		},
		"a Guaranteed pod whose recommendation exceeds its limit is at its clamp target": {
			pod:        pod(guaranteed()).obj(),
			recs:       Recommendations{"app": {"memory": rec("memory", "149Mi", "")}},
			wantReason: ReasonClampedAtLimit,
			wantQoS:    [2]corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSGuaranteed},
		},
		"not resizable drift outranks a clamped request": {
			pod:        pod(guaranteed().req("ephemeral-storage", "1Gi")).obj(),
			recs:       Recommendations{"app": {"memory": rec("memory", "149Mi", ""), "ephemeral-storage": rec("ephemeral-storage", "2Gi", "")}},
			wantReason: ReasonNotResizable,
			wantQoS:    [2]corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSGuaranteed},
		},
		"lowering a Guaranteed pod's request would make it Burstable: qos_pinned": {
			pod:        pod(guaranteed()).obj(),
			recs:       Recommendations{"app": {"cpu": rec("cpu", "50m", "")}},
			wantReason: ReasonQoSPinned,
			wantQoS:    [2]corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable},
		},
		"a drifted request is resized": {
			pod:     pod(container("app").req("cpu", "100m")).obj(),
			recs:    Recommendations{"app": {"cpu": rec("cpu", "120m", "")}},
			wantQoS: [2]corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBurstable},
		},
		"run-to-completion init containers are not resized": {
			pod:        pod(container("app")).init(container("migrate").req("cpu", "1")).obj(),
			recs:       Recommendations{"migrate": {"cpu": rec("cpu", "50m", "")}},
			wantReason: ReasonNoDrift,
			wantQoS:    [2]corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBurstable},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Resize(tc.pod, tc.recs, settings(defaultManaged(), 10, 50))
			if d.Reason != tc.wantReason {
				t.Errorf("reason = %q (%s), want %q", d.Reason, d.Message, tc.wantReason)
			}
			if got := [2]corev1.PodQOSClass{d.QoSBefore, d.QoSAfter}; got != tc.wantQoS {
				t.Errorf("QoS before/after = %v, want %v", got, tc.wantQoS)
			}
			if d.Reason != "" && (len(d.Changes) > 0 || len(d.Clamps) > 0) {
				t.Errorf("skip %q carries changes %v / clamps %v", d.Reason, d.Changes, d.Clamps)
			}
			if d.Reason == "" && len(d.Changes) == 0 {
				t.Errorf("patch decision without changes")
			}
		})
	}
}

func TestStep(t *testing.T) {
	cases := map[string]struct {
		cur, rec    int64
		thr, maxPct float64
		want        int64
		moved       bool
	}{
		"no current value takes the recommendation":   {cur: 0, rec: 250, thr: 10, maxPct: 50, want: 250, moved: true},
		"zero recommendation on zero is no drift":     {cur: 0, rec: 0, thr: 10, maxPct: 50, want: 0},
		"shrink truncates toward zero":                {cur: 101, rec: 10, thr: 10, maxPct: 50, want: 55, moved: true},
		"a cap above 100% never overshoots":           {cur: 100, rec: 500, thr: 10, maxPct: 300, want: 500, moved: true},
		"a one-unit gap still makes progress":         {cur: 1, rec: 2, thr: 10, maxPct: 50, want: 2, moved: true},
		"a tiny step that truncates to cur moves one": {cur: 1000, rec: 1003, thr: 0, maxPct: 10, want: 1001, moved: true},
		"threshold 0 moves on any gap":                {cur: 1000, rec: 999, thr: 0, maxPct: 50, want: 999, moved: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, moved := step(tc.cur, tc.rec, pct(tc.thr).Rat(), pct(tc.maxPct).Rat())
			if got != tc.want || moved != tc.moved {
				t.Errorf("step(%d, %d) = %d, %v; want %d, %v", tc.cur, tc.rec, got, moved, tc.want, tc.moved)
			}
		})
	}
}

func TestStepMiB(t *testing.T) {
	const mi = 1 << 20
	cases := []struct{ cur, t, rec, want int64 }{
		{256 * mi, 178 * mi, 100 * mi, 178 * mi},       // already whole
		{256 * mi, 178*mi + 1, 100 * mi, 179 * mi},     // down: rounded up, still below cur
		{100 * mi, 150*mi + 512, 201 * mi, 151 * mi},   // up: rounded up
		{100 * mi, 200*mi + 7, 200*mi + 9, 200*mi + 9}, // up: never past rec
		{100*mi + 3, 100*mi + 1, 50 * mi, 100*mi + 1},  // down: rounding would reach cur, kept
	}
	for _, c := range cases {
		if got := stepMiB(c.cur, c.t, c.rec); got != c.want {
			t.Errorf("stepMiB(%d, %d, %d) = %d, want %d", c.cur, c.t, c.rec, got, c.want)
		}
	}
}
