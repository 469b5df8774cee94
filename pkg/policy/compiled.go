package policy

import (
	"fmt"
	"slices"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
	"k8s.io/apimachinery/pkg/labels"
)

// Compiled is a valid policy ready for matching and for reading its parsed values. It is
// built by Compile and must be treated as read-only: it is shared between goroutines.
type Compiled struct {
	Kind       string // ballastv1.KindClusterResourcePolicy or ballastv1.KindResourcePolicy
	Namespace  string // empty for a ClusterResourcePolicy
	Name       string
	Generation int64

	// Spec is a copy of the spec with the resolve-time defaults applied
	// (ballastv1.DefaultPolicySpec).
	Spec ballastv1.ResourcePolicySpec

	// Metrics are Spec.Metrics parsed, in spec order.
	Metrics []Metric
	// Readiness are the readiness settings, parsed.
	Readiness Readiness
	// Resize are the resize settings and thresholds, parsed.
	Resize Resize
	// MinAllowed and MaxAllowed are spec.minAllowed/maxAllowed by resource, in whole units
	// (millicores for cpu, bytes otherwise); a missing resource is unbounded.
	MinAllowed, MaxAllowed map[string]int64
	// HPA is behaviors.hpa: ballastv1.HPAPreserve (the default), HPAScaleTarget or HPAIgnore.
	HPA string
	// Runtime is spec.runtime, parsed: type (blank ⇒ generic) and margin (blank ⇒ 5%).
	Runtime Runtime
	// PodLevel is spec.podLevel: PodLevelKeep (blank) or PodLevelSize.
	PodLevel string
	// StartupBoost is behaviors.startupBoost parsed; nil when the policy boosts nothing.
	StartupBoost *Boost

	kinds         []string
	include       []Pattern
	exclude       []Pattern
	annotations   map[string]Pattern
	labelSelector labels.Selector
}

// Compile validates spec against floors (a ResourcePolicy is held to them, a
// ClusterResourcePolicy only to the absolute floors; see Floors) and compiles the policy
// kind/namespace/name. An invalid spec
// returns a *ValidationError carrying the Valid condition's reason and message; a kind or
// namespace that does not fit (a ResourcePolicy without namespace, a ClusterResourcePolicy
// with one, an unknown kind) returns a plain error.
func Compile(kind, namespace, name string, generation int64, spec ballastv1.ResourcePolicySpec, floors Floors) (*Compiled, error) {
	switch {
	case kind == ballastv1.KindClusterResourcePolicy && namespace != "":
		return nil, fmt.Errorf("compiling %s %s: a cluster policy has no namespace (got %q)", kind, name, namespace)
	case kind == ballastv1.KindResourcePolicy && namespace == "":
		return nil, fmt.Errorf("compiling %s %s: namespace is required", kind, name)
	case kind != ballastv1.KindClusterResourcePolicy && kind != ballastv1.KindResourcePolicy:
		return nil, fmt.Errorf("compiling %s %s: unknown policy kind", kind, name)
	}
	// The defaults, raised to the floors, are themselves valid, so the defaulted spec fails
	// exactly where the written one does and reports the written value.
	l := floors.limitsFor(kind)
	defaulted := l.raise(ballastv1.DefaultPolicySpec(spec), spec)
	p, verr := parse(defaulted, l)
	if verr != nil {
		return nil, verr
	}
	return &Compiled{
		Kind:          kind,
		Namespace:     namespace,
		Name:          name,
		Generation:    generation,
		Spec:          defaulted,
		Metrics:       p.metrics,
		Readiness:     p.readiness,
		Resize:        p.resize,
		MinAllowed:    p.minAllowed,
		MaxAllowed:    p.maxAllowed,
		HPA:           p.hpa,
		Runtime:       p.runtime,
		PodLevel:      p.podLevel,
		StartupBoost:  p.boost,
		kinds:         slices.Clone(defaulted.Selector.Kinds),
		include:       p.include,
		exclude:       p.exclude,
		annotations:   p.annotations,
		labelSelector: p.labelSelector,
	}, nil
}

// CompileCluster compiles a ClusterResourcePolicy object (absolute floors only).
func CompileCluster(p *ballastv1.ClusterResourcePolicy) (*Compiled, error) {
	return Compile(ballastv1.KindClusterResourcePolicy, "", p.Name, p.Generation, p.Spec, Floors{})
}

// CompileNamespaced compiles a ResourcePolicy object against the cluster's floors.
func CompileNamespaced(p *ballastv1.ResourcePolicy, floors Floors) (*Compiled, error) {
	return Compile(ballastv1.KindResourcePolicy, p.Namespace, p.Name, p.Generation, p.Spec, floors)
}

// Ref is the WorkloadProfile status.policyRef of this policy.
func (c *Compiled) Ref() ballastv1.PolicyRef {
	return ballastv1.PolicyRef{Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
}

// Key is "Kind/namespace/name", the policyKey of the measurementHash (SPEC §3.7).
func (c *Compiled) Key() string { return identity.PolicyKey(c.Kind, c.Namespace, c.Name) }

// Discriminator is this policy's part of profile names (SPEC §3.5).
func (c *Compiled) Discriminator() string { return identity.Discriminator(c.Kind, c.Namespace, c.Name) }

// RefAnnotation is the value of the policy-ref pod annotation: <name> for a
// ClusterResourcePolicy, <namespace>/<name> for a ResourcePolicy.
func (c *Compiled) RefAnnotation() string {
	if c.Kind == ballastv1.KindResourcePolicy {
		return ballastv1.PolicyRefValue(c.Namespace, c.Name)
	}
	return c.Name
}

// ResizeThreshold is the drift threshold, in percent, of (resource, field) (SPEC §8.3).
func (c *Compiled) ResizeThreshold(resource, field string) Decimal {
	return c.Resize.Threshold(resource, field)
}

// Matches reports whether the policy's selector matches the pod (SPEC §3.4 step 2): kinds
// (top-level kind, or the direct controller kind for ReplicaSet/Job compatibility),
// namespace include/exclude, annotations and labelSelector must all match. It does not
// apply the ResourcePolicy namespace scope; Resolve does.
func (c *Compiled) Matches(pod PodFacts) bool {
	if len(c.kinds) > 0 && !slices.Contains(c.kinds, pod.Kind) &&
		(pod.ControllerKind == "" || !slices.Contains(c.kinds, pod.ControllerKind)) {
		return false
	}
	if len(c.include) > 0 && !matchAny(c.include, pod.Namespace) {
		return false
	}
	if matchAny(c.exclude, pod.Namespace) {
		return false
	}
	for key, pattern := range c.annotations {
		value, ok := pod.Annotations[key]
		if !ok || !pattern.Match(value) {
			return false
		}
	}
	return c.labelSelector.Matches(labels.Set(pod.Labels))
}

// InScope reports whether the policy may govern a pod of namespace: a ClusterResourcePolicy
// any pod, a ResourcePolicy only pods of its own namespace (an empty namespace admits none).
func (c *Compiled) InScope(namespace string) bool {
	if c.Kind == ballastv1.KindResourcePolicy {
		return namespace != "" && namespace == c.Namespace
	}
	return true
}
