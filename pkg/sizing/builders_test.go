package sizing

import (
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fixture builders: pod(container("app").req("cpu", "100m").lim("cpu", "200m")).obj().

type ctrBuilder struct{ c corev1.Container }

func container(name string) *ctrBuilder {
	return &ctrBuilder{c: corev1.Container{Name: name, Image: "registry.example/app:1"}}
}

// req sets requests from resource/value pairs.
func (b *ctrBuilder) req(kv ...string) *ctrBuilder {
	b.c.Resources.Requests = withPairs(b.c.Resources.Requests, kv)
	return b
}

// lim sets limits from resource/value pairs.
func (b *ctrBuilder) lim(kv ...string) *ctrBuilder {
	b.c.Resources.Limits = withPairs(b.c.Resources.Limits, kv)
	return b
}

// always makes an init container a native sidecar.
func (b *ctrBuilder) always() *ctrBuilder {
	p := corev1.ContainerRestartPolicyAlways
	b.c.RestartPolicy = &p
	return b
}

func withPairs(list corev1.ResourceList, kv []string) corev1.ResourceList {
	if list == nil {
		list = corev1.ResourceList{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		list[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return list
}

type podBuilder struct{ p corev1.Pod }

func pod(containers ...*ctrBuilder) *podBuilder {
	b := &podBuilder{p: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}}
	for _, c := range containers {
		b.p.Spec.Containers = append(b.p.Spec.Containers, c.c)
	}
	return b
}

func (b *podBuilder) init(containers ...*ctrBuilder) *podBuilder {
	for _, c := range containers {
		b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, c.c)
	}
	return b
}

func (b *podBuilder) ephemeral(name string) *podBuilder {
	b.p.Spec.EphemeralContainers = append(b.p.Spec.EphemeralContainers,
		corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox"}})
	return b
}

func (b *podBuilder) podLevel(r corev1.ResourceRequirements) *podBuilder {
	b.p.Spec.Resources = &r
	return b
}

func (b *podBuilder) annotate(kv ...string) *podBuilder {
	if b.p.Annotations == nil {
		b.p.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		b.p.Annotations[kv[i]] = kv[i+1]
	}
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.p.DeepCopy() }

// rec builds a recommendation of resource res; "" means none for that field.
func rec(res corev1.ResourceName, request, limit string) ResourceRecommendation {
	var r ResourceRecommendation
	if request != "" {
		r.Request, r.HasRequest = u(res, request), true
	}
	if limit != "" {
		r.Limit, r.HasLimit = u(res, limit), true
	}
	return r
}

// u is a quantity string in Units of res.
func u(res corev1.ResourceName, s string) Units { return UnitsOf(res, resource.MustParse(s)) }

// rl builds a ResourceList from resource/value pairs.
func rl(kv ...string) corev1.ResourceList { return withPairs(nil, kv) }

func q(s string) resource.Quantity { return resource.MustParse(s) }

// defaultManaged is the chart preset's policy (SPEC §5.2): cpu request; memory and
// ephemeral-storage request and limit.
func defaultManaged() Managed {
	return Managed{
		{corev1.ResourceCPU, Request}:              true,
		{corev1.ResourceMemory, Request}:           true,
		{corev1.ResourceMemory, Limit}:             true,
		{corev1.ResourceEphemeralStorage, Request}: true,
		{corev1.ResourceEphemeralStorage, Limit}:   true,
	}
}

// allManaged manages every field of every recommended resource.
func allManaged() Managed {
	m := Managed{}
	for _, res := range recommendedResources {
		m[Target{res, Request}] = true
		m[Target{res, Limit}] = true
	}
	return m
}

// cmpOpts compare quantities by value and treat nil and empty alike.
var cmpOpts = []cmp.Option{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmpopts.EquateEmpty(),
}
