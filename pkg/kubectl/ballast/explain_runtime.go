package ballast

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing"
	"github.com/ballastk8s/ballast/pkg/sizing/memfloor"
)

// runtimeOf reports the policy's runtime profile and each container's floor (nil for a
// generic policy).
func runtimeOf(p *policy.Compiled, plan sizing.Plan) *runtimeExplain {
	if p.Runtime.Type == "" || p.Runtime.Type == policy.RuntimeGeneric {
		return nil
	}
	re := &runtimeExplain{Type: p.Runtime.Type, Margin: p.Runtime.Margin.String() + "%"}
	for _, n := range plan.Runtimes {
		rc := runtimeContainer{Container: n.Container, Runtime: string(n.Floor.Runtime), Source: n.Floor.Source,
			Why: n.Floor.Why, Note: n.Floor.Note}
		if n.Floor.Has {
			rc.Floor = sizing.Units(n.Floor.Bytes).String(corev1.ResourceMemory)
		}
		re.RestartOnly = re.RestartOnly || sizing.MemoryShrinkNeedsRestart(n.Floor.Runtime)
		re.Containers = append(re.Containers, rc)
	}
	if memfloor.Runtime(p.Runtime.Type) == memfloor.JVM {
		re.RestartOnly = true
	}
	return re
}

// podLevelOf reports what admission does with the pod's pod-level spec.resources.
func podLevelOf(pod *corev1.Pod, p *policy.Compiled, plan sizing.Plan) *podLevelExplain {
	pr := pod.Spec.Resources
	if pr == nil || (len(pr.Requests) == 0 && len(pr.Limits) == 0) {
		return nil
	}
	cur := (&sizing.PodPlan{Requests: pr.Requests, Limits: pr.Limits}).String()
	pe := &podLevelExplain{Mode: p.PodLevel, Current: cur}
	if pp := plan.Pod; pp != nil {
		pe.Notes, pe.Held = pp.Notes, pp.Held
		if pp.Changed {
			pe.Written = pp.String()
		}
	}
	return pe
}

// guardsOf names what shaped one written value beyond the profile's recommendation.
func guardsOf(plan sizing.Plan, container string, res corev1.ResourceName, field sizing.Field) []string {
	var out []string
	for _, n := range plan.Runtimes {
		if n.Container != container || res != corev1.ResourceMemory {
			continue
		}
		for _, r := range n.Raised {
			if r.Field == field {
				out = append(out, fmt.Sprintf("runtime floor (%s): profile %s raised to %s = %s [%s]", n.Floor.Runtime,
					r.From.String(res), r.To.String(res), n.Floor.Why, n.Floor.Source))
			}
		}
	}
	for _, b := range plan.Bounded {
		if b.Container == container && b.Resource == res && b.Field == field {
			out = append(out, b.String())
		}
	}
	return out
}
