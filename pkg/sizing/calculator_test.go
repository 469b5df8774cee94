package sizing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestCalculatePlan pins the per-field shape of a Plan that the renderers and the resize
// controller read: current, recommended, target, change, clamp and reason.
func TestCalculatePlan(t *testing.T) {
	mem, cpu, eph := corev1.ResourceMemory, corev1.ResourceCPU, corev1.ResourceEphemeralStorage
	cases := map[string]struct {
		pod      *corev1.Pod
		recs     Recommendations
		params   Params
		stepping Stepping
		want     []ResourcePlan // of container "app"
		stepDown bool
	}{
		// §8.3: the limit steps 256Mi → 178Mi; the 190Mi request recommendation is clamped
		// to that limit and, though its own drift is below 20%, held at it.
		"stepped: the request is clamped to the stepped limit": {
			pod:      pod(container("app").req("memory", "200Mi").lim("memory", "256Mi")).obj(),
			recs:     Recommendations{"app": {mem: rec(mem, "190Mi", "100Mi")}},
			params:   settings(defaultManaged(), 20, 50),
			stepping: Stepped,
			want: []ResourcePlan{{Resource: mem,
				Limit: FieldPlan{Managed: true, Current: u(mem, "256Mi"), HasCurrent: true,
					Recommended: u(mem, "100Mi"), HasRecommended: true, Target: 186646528, Changed: true},
				Request: FieldPlan{Managed: true, Current: u(mem, "200Mi"), HasCurrent: true,
					Recommended: u(mem, "190Mi"), HasRecommended: true, Target: 186646528, Changed: true,
					Clamped: true, PreClamp: u(mem, "190Mi"), Bound: 186646528},
			}},
		},
		"stepped: a held request whose recommendation drifted is clamped_at_limit": {
			pod:      pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "100m", "memory", "128Mi")).obj(),
			recs:     Recommendations{"app": {mem: rec(mem, "149Mi", "")}},
			params:   settings(defaultManaged(), 10, 50),
			stepping: Stepped,
			want: []ResourcePlan{{Resource: mem,
				Limit: FieldPlan{Managed: true, Current: u(mem, "128Mi"), HasCurrent: true, Target: u(mem, "128Mi")},
				Request: FieldPlan{Managed: true, Current: u(mem, "128Mi"), HasCurrent: true,
					Recommended: u(mem, "149Mi"), HasRecommended: true, Target: u(mem, "128Mi"),
					Clamped: true, PreClamp: u(mem, "149Mi"), Bound: u(mem, "128Mi"), Reason: ReasonClampedAtLimit},
			}},
		},
		"stepped: ephemeral-storage only reports drift": {
			pod:      pod(container("app").req("cpu", "100m", "ephemeral-storage", "500Mi")).obj(),
			recs:     Recommendations{"app": {cpu: rec(cpu, "105m", ""), eph: rec(eph, "2Gi", "")}},
			params:   settings(defaultManaged(), 10, 50),
			stepping: Stepped,
			want: []ResourcePlan{
				{Resource: cpu,
					Limit: FieldPlan{},
					Request: FieldPlan{Managed: true, Current: 100, HasCurrent: true, Recommended: 105, HasRecommended: true,
						Target: 100, Reason: ReasonNoDrift}},
				{Resource: eph,
					Limit: FieldPlan{Managed: true},
					Request: FieldPlan{Managed: true, Current: u(eph, "500Mi"), HasCurrent: true, Target: u(eph, "500Mi"),
						Recommended: u(eph, "2Gi"), HasRecommended: true, Reason: ReasonNotResizable}},
			},
		},
		"at once: a value already written is no_change; the step-down is recorded": {
			pod:      pod(container("app").req("cpu", "100m", "memory", "128Mi").lim("cpu", "200m", "memory", "128Mi")).obj(),
			recs:     Recommendations{"app": {cpu: rec(cpu, "200m", ""), mem: rec(mem, "128Mi", "")}},
			params:   Params{Managed: defaultManaged()},
			stepping: AtOnce,
			stepDown: true,
			want: []ResourcePlan{
				{Resource: cpu,
					Limit: FieldPlan{Current: 200, HasCurrent: true, Target: 200},
					Request: FieldPlan{Managed: true, Current: 100, HasCurrent: true, Recommended: 200, HasRecommended: true,
						Target: 199, Changed: true}},
				{Resource: mem,
					Limit: FieldPlan{Managed: true, Current: u(mem, "128Mi"), HasCurrent: true, Target: u(mem, "128Mi")},
					Request: FieldPlan{Managed: true, Current: u(mem, "128Mi"), HasCurrent: true,
						Recommended: u(mem, "128Mi"), HasRecommended: true, Target: u(mem, "128Mi"), Reason: ReasonNoChange}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := Calculate(tc.pod, tc.recs, tc.params, tc.stepping)
			if len(plan.Containers) != 1 || plan.Containers[0].Name != "app" {
				t.Fatalf("containers = %+v, want app only", plan.Containers)
			}
			if diff := cmp.Diff(tc.want, plan.Containers[0].Resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			if plan.StepDown != tc.stepDown {
				t.Errorf("StepDown = %v, want %v", plan.StepDown, tc.stepDown)
			}
		})
	}
}

// TestRenderersReadOnePlan checks that Admission and Resize are renderings of Calculate:
// the same plan, not a second computation.
func TestRenderersReadOnePlan(t *testing.T) {
	p := pod(container("app").req("cpu", "100m", "memory", "200Mi").lim("memory", "256Mi")).obj()
	recs := Recommendations{"app": {corev1.ResourceCPU: rec(corev1.ResourceCPU, "500m", ""),
		corev1.ResourceMemory: rec(corev1.ResourceMemory, "190Mi", "100Mi")}}
	params := settings(defaultManaged(), 10, 50)
	if diff := cmp.Diff(AdmissionResult(Calculate(p, recs, params, AtOnce)), Admission(p, recs, params), cmpOpts...); diff != "" {
		t.Errorf("Admission is not AdmissionResult(Calculate(AtOnce)) (-want +got):\n%s", diff)
	}
	stepped := Calculate(p, recs, params, Stepped)
	if diff := cmp.Diff(ResizeOf(stepped), Resize(p, recs, params), cmpOpts...); diff != "" {
		t.Errorf("Resize is not ResizeOf(Calculate(Stepped)) (-want +got):\n%s", diff)
	}
	if got := Resize(p, recs, params).Plan; len(got.Containers) != 1 {
		t.Errorf("ResizeDecision carries no plan: %+v", got)
	}
}
