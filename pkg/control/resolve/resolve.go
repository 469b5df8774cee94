// Package resolve binds a pod to its policy and profile (SPEC §3). The webhook and the
// enrollment controller both call it, so admission and reconciliation compute identical
// results from the same caches. It reads only from the manager's cache: policies, and
// ReplicaSet/Job metadata for the owner walk.
package resolve

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/policy"
)

// Workload is a top-level workload (SPEC §3.1).
type Workload struct {
	Kind, Namespace, Name string
}

// Binding is what an enrolled pod resolves to.
type Binding struct {
	// Policy is the governing policy, nil when none matched.
	Policy          *policy.Compiled
	TupleLabels     map[string]string
	SelectorLabels  map[string]string
	ProfileName     string
	MeasurementHash string
	Workload        Workload
}

// PolicyRefAnnotation is the value of the policy-ref annotation, "" without a policy.
func (b Binding) PolicyRefAnnotation() string {
	if b.Policy == nil {
		return ""
	}
	return b.Policy.RefAnnotation()
}

// PolicyRef is the profile's status.policyRef, nil without a policy.
func (b Binding) PolicyRef() *ballastv1.PolicyRef {
	if b.Policy == nil {
		return nil
	}
	r := b.Policy.Ref()
	return &r
}

// Resolver resolves pods against the cached policies. Compiled policies are memoized per
// UID and generation, so the admission path compiles no regex twice.
type Resolver struct {
	reader client.Reader
	log    logr.Logger
	// floors returns the cluster's current ResourcePolicy floors (BallastConfig
	// spec.policyFloors); a change recompiles every ResourcePolicy.
	floors func() policy.Floors
	mu     sync.Mutex
	cache  map[types.UID]compiled
	counts map[string]int // memo entries per namespace ("" = cluster policies)
}

type compiled struct {
	generation int64
	floors     policy.Floors // those a ResourcePolicy was compiled against
	namespace  string        // "" for a ClusterResourcePolicy
	policy     *policy.Compiled
	err        error
}

// New returns a Resolver reading from r (the manager's cache).
func New(r client.Reader) *Resolver {
	return &Resolver{reader: r, log: logr.Discard(), cache: map[types.UID]compiled{}, counts: map[string]int{},
		floors: func() policy.Floors { return policy.DefaultFloors }}
}

// WithFloors sets where the ResourcePolicy floors come from (the config state's current
// BallastConfig in the binary); without it the default floors apply.
func (r *Resolver) WithFloors(f func() policy.Floors) *Resolver {
	r.floors = f
	return r
}

// Floors are the ResourcePolicy floors in force now.
func (r *Resolver) Floors() policy.Floors { return r.floors() }

// WithLogger sets the logger that reports invalid policies: once per policy generation
// and process (compilations are memoized), never per pod (SPEC §3.3).
func (r *Resolver) WithLogger(l logr.Logger) *Resolver {
	r.log = l
	return r
}

// Compile returns the compiled policy for an object, memoized by UID, generation and the
// floors passed to compile; the error is the validation failure of an invalid policy.
func (r *Resolver) Compile(obj client.Object, floors policy.Floors, compile func(policy.Floors) (*policy.Compiled, error)) (*policy.Compiled, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.cache[obj.GetUID()]; ok && c.generation == obj.GetGeneration() && c.floors.Equal(floors) {
		return c.policy, c.err
	}
	p, err := compile(floors)
	if err != nil {
		r.log.Error(nil, "policy skipped in resolution until it is fixed", "policy",
			ballastv1.PolicyRefValue(obj.GetNamespace(), obj.GetName()), "generation", obj.GetGeneration(), "problem", err.Error())
	}
	if _, ok := r.cache[obj.GetUID()]; !ok {
		r.counts[obj.GetNamespace()]++
	}
	r.cache[obj.GetUID()] = compiled{generation: obj.GetGeneration(), floors: floors, namespace: obj.GetNamespace(), policy: p, err: err}
	return p, err
}

// CompileCluster compiles a ClusterResourcePolicy through the memo (absolute floors only).
func (r *Resolver) CompileCluster(p *ballastv1.ClusterResourcePolicy) (*policy.Compiled, error) {
	return r.Compile(p, policy.Floors{}, func(policy.Floors) (*policy.Compiled, error) { return policy.CompileCluster(p) })
}

// CompileNamespaced compiles a ResourcePolicy through the memo, against the current floors.
func (r *Resolver) CompileNamespaced(p *ballastv1.ResourcePolicy) (*policy.Compiled, error) {
	return r.Compile(p, r.floors(), func(f policy.Floors) (*policy.Compiled, error) { return policy.CompileNamespaced(p, f) })
}

// Policy returns the compiled policy ref names (a WorkloadProfile's status.policyRef), read
// from the cache and compiled through the memo with the floors admission and enrollment
// use: the one way a controller loads a policy by reference. It returns (nil, nil) when the
// policy no longer exists, and the validation failure of an invalid policy as a
// *policy.ValidationError (errors.As); any other error is a failed cache read.
func (r *Resolver) Policy(ctx context.Context, ref ballastv1.PolicyRef) (*policy.Compiled, error) {
	key := client.ObjectKey{Name: ref.Name}
	var obj client.Object
	var compile func() (*policy.Compiled, error)
	if ref.Kind == ballastv1.KindResourcePolicy {
		p := &ballastv1.ResourcePolicy{}
		key.Namespace, obj, compile = ref.Namespace, p, func() (*policy.Compiled, error) { return r.CompileNamespaced(p) }
	} else {
		p := &ballastv1.ClusterResourcePolicy{}
		obj, compile = p, func() (*policy.Compiled, error) { return r.CompileCluster(p) }
	}
	if err := r.reader.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s: %w", ref.Kind, ballastv1.PolicyRefValue(key.Namespace, key.Name), err)
	}
	return compile()
}

// prune drops memo entries of namespace ("" = cluster policies) whose policy is gone.
func (r *Resolver) prune(namespace string, live map[types.UID]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, c := range r.cache {
		if c.namespace == namespace && !live[uid] {
			delete(r.cache, uid)
			r.counts[namespace]--
		}
	}
}

// size is the number of memo entries of namespace ("" = cluster policies).
func (r *Resolver) size(namespace string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[namespace]
}

// Candidates returns the valid compiled policies that may govern pods of namespace: those
// that compile and name only known MetricsSources.
func (r *Resolver) Candidates(ctx context.Context, namespace string) ([]*policy.Compiled, error) {
	var out []*policy.Compiled
	known, err := r.knownSources(ctx)
	if err != nil {
		return nil, err
	}
	// The objects are only read (compiling deep-copies the spec), so the cache's own copies
	// serve: no per-admission copy of every policy.
	crps := &ballastv1.ClusterResourcePolicyList{}
	if err := r.reader.List(ctx, crps, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ClusterResourcePolicies: %w", err)
	}
	live := make(map[types.UID]bool, len(crps.Items))
	for i := range crps.Items {
		p := &crps.Items[i]
		live[p.UID] = true
		if c, err := r.CompileCluster(p); err == nil &&
			len(policy.UnknownSources(c.Spec.Metrics, known)) == 0 {
			out = append(out, c)
		}
	}
	if len(live) < r.size("") {
		r.prune("", live)
	}
	if namespace == "" {
		return out, nil
	}
	rps := &ballastv1.ResourcePolicyList{}
	if err := r.reader.List(ctx, rps, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing ResourcePolicies of %s: %w", namespace, err)
	}
	live = make(map[types.UID]bool, len(rps.Items))
	for i := range rps.Items {
		p := &rps.Items[i]
		live[p.UID] = true
		if c, err := r.CompileNamespaced(p); err == nil &&
			len(policy.UnknownSources(c.Spec.Metrics, known)) == 0 {
			out = append(out, c)
		}
	}
	if len(live) < r.size(namespace) {
		r.prune(namespace, live)
	}
	return out, nil
}

// knownSources lists the names of the cached MetricsSources of a known type: a policy
// naming any other is invalid (UnknownMetricsSource) and governs no pod.
func (r *Resolver) knownSources(ctx context.Context) (map[string]bool, error) {
	list := &ballastv1.MetricsSourceList{}
	if err := r.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing MetricsSources: %w", err)
	}
	types := make(map[string]string, len(list.Items))
	for i := range list.Items {
		types[list.Items[i].Name] = list.Items[i].Spec.Type
	}
	return policy.KnownSources(types), nil
}

// Resolve binds pod under identityLabels. namespace overrides pod.Namespace when the pod
// does not carry it yet (admission requests name the namespace separately).
func (r *Resolver) Resolve(ctx context.Context, pod *corev1.Pod, namespace string, identityLabels []string) (Binding, error) {
	if namespace == "" {
		namespace = pod.Namespace
	}
	kind, name, ctrlKind := policy.TopLevel(pod.Name, namespace, pod.OwnerReferences, r.ownerLookup(ctx))
	cands, err := r.Candidates(ctx, namespace)
	if err != nil {
		return Binding{}, err
	}
	win := policy.Resolve(cands, policy.PodFacts{Namespace: namespace, Labels: pod.Labels,
		Annotations: pod.Annotations, Kind: kind, ControllerKind: ctrlKind})
	return Bind(identityLabels, pod.Labels, win, Workload{Kind: kind, Namespace: namespace, Name: name}), nil
}

// Bind computes names and hashes for a tuple under a policy (nil = no policy).
func Bind(identityLabels []string, podLabels map[string]string, p *policy.Compiled, w Workload) Binding {
	tuple, selector := identity.Tuple(identityLabels, podLabels)
	disc, key := ballastv1.NoPolicy, ""
	if p != nil {
		disc, key = p.Discriminator(), p.Key()
	}
	return Binding{
		Policy:          p,
		TupleLabels:     tuple,
		SelectorLabels:  selector,
		ProfileName:     identity.ProfileName(identityLabels, tuple, selector, disc),
		MeasurementHash: identity.MeasurementHash(identityLabels, selector, key),
		Workload:        w,
	}
}

var ownerGVK = map[string]schema.GroupVersionKind{
	"ReplicaSet": {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	"Job":        {Group: "batch", Version: "v1", Kind: "Job"},
}

// ownerLookup reads ReplicaSet and Job metadata from the cache.
func (r *Resolver) ownerLookup(ctx context.Context) policy.OwnerLookup {
	return func(kind, namespace, name string) ([]metav1.OwnerReference, bool) {
		gvk, ok := ownerGVK[kind]
		if !ok {
			return nil, false
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		if err := r.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m); err != nil {
			return nil, false
		}
		return m.OwnerReferences, true
	}
}

// Workload returns the pod's top-level workload (SPEC §3.1) from the cache.
func (r *Resolver) Workload(ctx context.Context, pod *corev1.Pod) Workload {
	kind, name, _ := policy.TopLevel(pod.Name, pod.Namespace, pod.OwnerReferences, r.ownerLookup(ctx))
	return Workload{Kind: kind, Namespace: pod.Namespace, Name: name}
}
