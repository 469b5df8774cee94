package discovery

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/series"
)

// Inputs is the cluster configuration a pod's interval and hash are resolved from.
type Inputs struct {
	// Policies maps a policy-ref annotation value ("<name>" for a ClusterResourcePolicy,
	// "<namespace>/<name>" for a ResourcePolicy) to the policy's metrics.
	Policies map[string][]ballastv1.MetricSpec
	// Sources maps a MetricsSource name to its type and pollInterval.
	Sources map[string]policy.Source
	// Hashes maps a WorkloadProfile name to its status.measurementHash.
	Hashes map[string]string
	// MinInterval is the agent's floor for any sampling interval (it protects the node from
	// a policy that asks for sub-second sampling).
	MinInterval time.Duration
	// IdentityLabels are BallastConfig's; nil while it is not known (nothing is sampled).
	IdentityLabels []string
	// Candidates are the valid policies of both kinds (compiled, every source known).
	Candidates []*policy.Compiled
}

// PolicyKey is the policy-ref annotation value naming a policy: "<name>" for a
// ClusterResourcePolicy (namespace ""), "<namespace>/<name>" for a ResourcePolicy.
func PolicyKey(namespace, name string) string { return ballastv1.PolicyRefValue(namespace, name) }

// Resolve fills p's Interval, Hash and RefIgnored. The interval is the policy's (SPEC
// §4.1: the smallest pollInterval among the known sources its metrics name; 60s without a
// policy, or when the policy-ref names a policy that does not exist), never below
// MinInterval. The hash is the measurementHash of the profile named by the profile-ref
// annotation, "" while the pod is not stamped, the profile does not exist or has no valid
// hash yet — or when the pod's own labels and namespace do not lead to that profile
// (TrustedRef): then RefIgnored is set and the samples are held as for an unstamped pod.
func Resolve(p Pod, in Inputs) Pod {
	var metrics []ballastv1.MetricSpec
	if p.PolicyRef != "" {
		metrics = in.Policies[p.PolicyRef]
	}
	p.Interval = max(policy.SamplingInterval(metrics, in.Sources), in.MinInterval)
	p.Hash, p.RefIgnored = "", false
	if p.ProfileRef == "" {
		return p
	}
	if in.IdentityLabels != nil && !TrustedRef(p, in.IdentityLabels, in.Candidates) {
		p.RefIgnored = true
		return p
	}
	if h := in.Hashes[p.ProfileRef]; h != "" && series.CheckProfile(h) == nil {
		p.Hash = h
	}
	return p
}

// TrustedRef reports whether the pod may feed the profile its profile-ref names: the name
// is the one its own labels give (identity tuple, SPEC §3.2 and §3.6) under a policy that
// covers the pod's namespace, labels and annotations (policy.Covers), or under no policy
// unless a policy without kinds covers it (the control plane binds such a pod to that
// policy or a better one, never to none; a kinds-restricted policy may not match it). The
// annotation is written by the webhook or the enrollment controller, but whoever creates
// the pod can write it too (kill switch on, webhook down): without this check a pod could
// file samples under any profile of the cluster.
//
// Trust model: a profile pools the pods of every namespace its policy covers whose
// identity labels are equal; ResourcePolicies (one namespace) and namespace selectors
// partition that pool, label selectors and kinds do not (the pod's creator chooses both).
func TrustedRef(p Pod, identityLabels []string, candidates []*policy.Compiled) bool {
	tuple, selector := identity.Tuple(identityLabels, p.Labels)
	governed := false
	for _, c := range candidates {
		if c == nil || !c.Covers(p.Namespace, p.Labels, p.Annotations) {
			continue
		}
		if identity.ProfileName(identityLabels, tuple, selector, c.Discriminator()) == p.ProfileRef {
			return true
		}
		governed = governed || len(c.Spec.Selector.Kinds) == 0
	}
	return !governed && identity.ProfileName(identityLabels, tuple, selector, ballastv1.NoPolicy) == p.ProfileRef
}

// Snapshot is the discovered state at one moment.
type Snapshot struct {
	// Version increases with every change the snapshot reflects.
	Version uint64
	// Synced: every informer has listed once.
	Synced bool
	// ConfigFound: BallastConfig "ballast" exists. Without it nothing is measured (SPEC §2.1).
	ConfigFound bool
	// Retention is BallastConfig's retentionWindow (the default when unset or invalid).
	Retention time.Duration
	// Pods are the enrolled pods of the node, resolved, sorted by namespace/name. The
	// slice is shared between snapshots: callers must not modify it.
	Pods []Pod
	// Capacity is the node's capacity (zero while its Node object is not known).
	Capacity Capacity
}

// Capacity is what a node can give a container at most; a zero field is unknown.
type Capacity struct {
	MilliCPU, MemoryBytes, EphemeralStorageBytes int64
}

// CapacityOf reads a Node's status.capacity.
func CapacityOf(c corev1.ResourceList) Capacity {
	var out Capacity
	if q, ok := c[corev1.ResourceCPU]; ok {
		out.MilliCPU = q.MilliValue()
	}
	if q, ok := c[corev1.ResourceMemory]; ok {
		out.MemoryBytes = q.Value()
	}
	if q, ok := c[corev1.ResourceEphemeralStorage]; ok {
		out.EphemeralStorageBytes = q.Value()
	}
	return out
}

// Build resolves pods against in and sorts them; pure.
func Build(pods []Pod, in Inputs) []Pod {
	out := make([]Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, Resolve(p, in))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}
