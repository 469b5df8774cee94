package sizing

import (
	"math/big"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing/memfloor"
)

// Params are the policy inputs of the calculator, built from a compiled policy by
// ParamsFor. The calculator never reads a policy spec: every number in Params was parsed
// and validated by policy.Compile.
type Params struct {
	// Managed is the set of (resource, field) the policy's metrics manage.
	Managed Managed
	// Thresholds are the resize drift thresholds in percent per (resource, field), the
	// chain of SPEC §8.3 already resolved; a missing entry means 10%. Admission ignores them.
	Thresholds map[Target]policy.Decimal
	// MaxChangePerCycle caps one resize cycle's step, in percent of the gap; zero means
	// 50%. Admission ignores it.
	MaxChangePerCycle policy.Decimal
	// Bounds keep the result admissible and the profile's values within the allowed
	// range (bounds.go). ParamsFor fills Allowed from the policy's minAllowed and
	// maxAllowed; callers add the namespace's LimitRanges and quotas (WithBounds).
	Bounds Bounds
	// Runtime is the policy's runtime memory profile (floors, restart-only shrinks).
	Runtime RuntimeParams
	// PodLevel is PodLevelSize when pods with pod-level spec.resources get them sized from
	// their containers; otherwise (keep) container changes are kept within them.
	PodLevel string
	// PodLevelInPlace lets a Stepped (resize) plan change pod-level spec.resources; without
	// it a resize treats podLevel size as keep, since the API server rejects the change
	// unless InPlacePodLevelResourcesVerticalScaling is on.
	PodLevelInPlace bool
}

// sizesPodLevel reports whether a plan of stepping s rewrites pod-level resources.
func (p Params) sizesPodLevel(s Stepping) bool {
	return p.PodLevel == PodLevelSize && (s == AtOnce || p.PodLevelInPlace)
}

// Pod-level modes (policy spec.podLevel).
const (
	PodLevelKeep = policy.PodLevelKeep
	PodLevelSize = policy.PodLevelSize
)

// WithBounds returns p with the namespace's LimitRanges and quotas, and the allowed range
// narrowed by extra (e.g. the largest node's allocatable).
func (p Params) WithBounds(limitRanges []corev1.LimitRange, quotas []corev1.ResourceQuota, extra map[corev1.ResourceName]Range) Params {
	p.Bounds.LimitRanges, p.Bounds.Quotas = limitRanges, quotas
	if len(extra) == 0 {
		return p
	}
	allowed := make(map[corev1.ResourceName]Range, len(p.Bounds.Allowed)+len(extra))
	for res, r := range p.Bounds.Allowed {
		allowed[res] = r
	}
	for res, e := range extra {
		r := allowed[res]
		if e.HasMax {
			r = r.WithMax(e.Max, e.MaxFrom)
		}
		if e.HasMin {
			r = r.WithMin(e.Min, e.MinFrom)
		}
		allowed[res] = r
	}
	p.Bounds.Allowed = allowed
	return p
}

// ParamsFor derives the calculator's parameters from a compiled (so valid) policy: the
// managed set from its metrics, the resize threshold of every (resource, field) from
// Compiled.ResizeThreshold, and maxChangePerCycle with its resolve-time default.
func ParamsFor(c *policy.Compiled) Params {
	p := Params{Managed: Managed{}, Thresholds: map[Target]policy.Decimal{}}
	if c == nil {
		return p
	}
	for _, m := range c.Metrics {
		p.Managed[Target{Resource: corev1.ResourceName(m.Resource), Field: Field(m.Field)}] = true
	}
	for _, res := range recommendedResources {
		for _, f := range [...]Field{Request, Limit} {
			p.Thresholds[Target{res, f}] = c.ResizeThreshold(string(res), string(f))
		}
	}
	p.MaxChangePerCycle = c.Resize.MaxChangePerCycle
	p.Runtime = RuntimeParams{Type: memfloor.Runtime(c.Runtime.Type)}
	if c.Runtime.Type != "" {
		p.Runtime.Margin = c.Runtime.Margin.Rat()
	}
	p.PodLevel = c.PodLevel
	// The policy's minAllowed/maxAllowed bound every recommended value.
	for _, res := range recommendedResources {
		r := Range{}
		if v, ok := c.MinAllowed[string(res)]; ok {
			r = r.WithMin(Units(v), "policy minAllowed "+Units(v).String(res))
		}
		if v, ok := c.MaxAllowed[string(res)]; ok {
			r = r.WithMax(Units(v), "policy maxAllowed "+Units(v).String(res))
		}
		if r.HasMin || r.HasMax {
			if p.Bounds.Allowed == nil {
				p.Bounds.Allowed = map[corev1.ResourceName]Range{}
			}
			p.Bounds.Allowed[res] = r
		}
	}
	return p
}

// defaultThreshold and defaultMaxChange end the chains when Params leaves them unset
// (SPEC §2.3: 10% and 50%).
var (
	defaultThreshold = big.NewRat(10, 1)
	defaultMaxChange = big.NewRat(50, 1)
)

func (p Params) threshold(res corev1.ResourceName, f Field) *big.Rat {
	if d, ok := p.Thresholds[Target{res, f}]; ok && d.Sign() >= 0 {
		return d.Rat()
	}
	return defaultThreshold
}

func (p Params) maxChange() *big.Rat {
	if p.MaxChangePerCycle.Sign() <= 0 {
		return defaultMaxChange
	}
	return p.MaxChangePerCycle.Rat()
}
