package sizing

import (
	"math/big"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/sizing/memfloor"
)

func (b *ctrBuilder) env(kv ...string) *ctrBuilder {
	for i := 0; i+1 < len(kv); i += 2 {
		b.c.Env = append(b.c.Env, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
	}
	return b
}

func runtimeParams(rt memfloor.Runtime) Params {
	p := Params{Managed: defaultManaged(), Runtime: RuntimeParams{Type: rt, Margin: big.NewRat(5, 1)}}
	return p
}

// jvmFloor512 is the floor of -Xmx512m with a 5% margin: (512Mi + 48Mi) × 1.05 = 588Mi.
const jvmFloor512 = "588Mi"

func TestAdmissionRuntimeFloors(t *testing.T) {
	cases := map[string]struct {
		pod      *corev1.Pod
		recs     Recommendations
		params   Params
		want     corev1.ResourceList // app's requests and limits after admission, merged
		wantAnn  string              // substring of the runtime-floor annotation ("" = none)
		wantNote string              // substring of the container's runtime note
	}{
		"jvm -Xmx raises request and limit to heap + non-heap + 5%": {
			pod:     pod(container("app").env("JAVA_TOOL_OPTIONS", "-Xmx512m").req("memory", "1Gi").lim("memory", "1Gi")).obj(),
			recs:    Recommendations{"app": {"memory": rec("memory", "300Mi", "400Mi")}},
			params:  runtimeParams(memfloor.JVM),
			want:    rl("memory", jvmFloor512),
			wantAnn: "app jvm floor 588Mi (JAVA_TOOL_OPTIONS -Xmx512m",
		},
		"a recommendation above the floor is untouched": {
			pod:    pod(container("app").env("JAVA_TOOL_OPTIONS", "-Xmx512m").req("memory", "1Gi").lim("memory", "2Gi")).obj(),
			recs:   Recommendations{"app": {"memory": rec("memory", "700Mi", "900Mi")}},
			params: runtimeParams(memfloor.JVM),
			want:   rl("memory", "900Mi"),
		},
		"generic policy ignores -Xmx": {
			pod:    pod(container("app").env("JAVA_TOOL_OPTIONS", "-Xmx512m").req("memory", "1Gi").lim("memory", "1Gi")).obj(),
			recs:   Recommendations{"app": {"memory": rec("memory", "300Mi", "400Mi")}},
			params: runtimeParams(memfloor.Generic),
			want:   rl("memory", "400Mi"),
		},
		"maxAllowed caps a floor": {
			pod:  pod(container("app").env("JAVA_TOOL_OPTIONS", "-Xmx512m").req("memory", "1Gi").lim("memory", "1Gi")).obj(),
			recs: Recommendations{"app": {"memory": rec("memory", "300Mi", "400Mi")}},
			params: func() Params {
				p := runtimeParams(memfloor.JVM)
				p.Bounds.Allowed = map[corev1.ResourceName]Range{"memory": Range{}.WithMax(u("memory", "500Mi"), "policy maxAllowed 500Mi")}
				return p
			}(),
			want:    rl("memory", "500Mi"),
			wantAnn: "588Mi",
		},
		"go GOMEMLIMIT auto-detected": {
			pod:     pod(container("app").env("GOMEMLIMIT", "200MiB").req("memory", "1Gi").lim("memory", "1Gi")).obj(),
			recs:    Recommendations{"app": {"memory": rec("memory", "100Mi", "150Mi")}},
			params:  runtimeParams(memfloor.Auto),
			want:    rl("memory", "210Mi"),
			wantAnn: "app go floor 210Mi (GOMEMLIMIT=200MiB",
		},
		"valueFrom is unknown: no floor, reported": {
			pod: func() *corev1.Pod {
				p := pod(container("app").req("memory", "1Gi").lim("memory", "1Gi")).obj()
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS",
					ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}}}
				return p
			}(),
			recs:     Recommendations{"app": {"memory": rec("memory", "300Mi", "400Mi")}},
			params:   runtimeParams(memfloor.JVM),
			want:     rl("memory", "400Mi"),
			wantNote: "valueFrom",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := Calculate(tc.pod, tc.recs, tc.params, AtOnce)
			res := AdmissionResult(plan)
			if len(res.Changes) != 1 {
				t.Fatalf("changes %+v (skip %s)", res.Changes, res.SkipReason)
			}
			got := merged(res.Changes[0].Requests.DeepCopy(), res.Changes[0].Limits)
			lim := res.Changes[0].Limits["memory"]
			if diff := cmp.Diff(tc.want, corev1.ResourceList{"memory": lim}, cmpOpts...); diff != "" {
				t.Errorf("limit (-want +got):\n%s\nall %v", diff, got)
			}
			if req := res.Changes[0].Requests["memory"]; req.Cmp(lim) > 0 {
				t.Errorf("request %s above limit %s", req.String(), lim.String())
			}
			ann := res.Annotations[v1.RuntimeFloorAnnotation]
			if tc.wantAnn == "" && ann != "" || !strings.Contains(ann, tc.wantAnn) {
				t.Errorf("runtime-floor annotation %q, want it to contain %q", ann, tc.wantAnn)
			}
			if tc.wantNote != "" && (len(plan.Runtimes) != 1 || !strings.Contains(plan.Runtimes[0].String(), tc.wantNote)) {
				t.Errorf("runtime notes %+v, want one mentioning %q", plan.Runtimes, tc.wantNote)
			}
		})
	}
}

// A jvm pod's memory shrink is held with restart_only while its cpu still resizes; a
// generic pod shrinks both; a jvm memory growth still goes out.
func TestResizeRestartOnly(t *testing.T) {
	jvmPod := pod(container("app").env("JAVA_TOOL_OPTIONS", "-Xmx128m").
		req("cpu", "1", "memory", "1Gi").lim("memory", "1Gi")).obj()
	cases := map[string]struct {
		rt          memfloor.Runtime
		recs        Recommendations
		wantReason  string
		wantCPU     string // the cpu request written ("" = none)
		wantMemory  string // the memory limit written ("" = none)
		wantHeldLen int
	}{
		"jvm: cpu resized, memory shrink held": {rt: memfloor.JVM,
			recs:    Recommendations{"app": {"cpu": rec("cpu", "500m", ""), "memory": rec("memory", "400Mi", "600Mi")}},
			wantCPU: "500m", wantHeldLen: 2},
		"jvm: only a memory shrink ⇒ restart_only skip": {rt: memfloor.JVM,
			recs:       Recommendations{"app": {"memory": rec("memory", "400Mi", "600Mi")}},
			wantReason: ReasonRestartOnly, wantHeldLen: 2},
		"jvm: memory growth goes out": {rt: memfloor.JVM,
			recs:       Recommendations{"app": {"memory": rec("memory", "1Gi", "1536Mi")}},
			wantMemory: "1536Mi"},
		"generic: memory shrinks in place": {rt: memfloor.Generic,
			recs:    Recommendations{"app": {"cpu": rec("cpu", "500m", ""), "memory": rec("memory", "400Mi", "600Mi")}},
			wantCPU: "500m", wantMemory: "600Mi"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := settings(defaultManaged(), 10, 100)
			p.Runtime = RuntimeParams{Type: tc.rt}
			d := Resize(jvmPod, tc.recs, p)
			if d.Reason != tc.wantReason {
				t.Fatalf("reason %q (%s), want %q", d.Reason, d.Message, tc.wantReason)
			}
			if len(d.RestartOnly) != tc.wantHeldLen {
				t.Errorf("restart-only holds %q, want %d", d.RestartOnly, tc.wantHeldLen)
			}
			var cpu, mem string
			for _, ch := range d.Changes {
				if q, ok := ch.Requests["cpu"]; ok {
					cpu = q.String()
				}
				if q, ok := ch.Limits["memory"]; ok {
					mem = q.String()
				}
			}
			if cpu != tc.wantCPU || mem != tc.wantMemory {
				t.Errorf("written cpu request %q memory limit %q; want %q %q", cpu, mem, tc.wantCPU, tc.wantMemory)
			}
		})
	}
}
