package ballast

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// defaultIdentityLabels are the chart's identity labels, used by enroll when neither
// --identity-labels nor a BallastConfig names them (SPEC §14.1).
var defaultIdentityLabels = []string{"app.kubernetes.io/name", "app.kubernetes.io/component"}

// errNoConfig: BallastConfig ballast does not exist, so no identity can be computed.
var errNoConfig = errors.New("BallastConfig " + ballastv1.BallastConfigName + " not found: Ballast computes no identity without it")

// identityLabels reads BallastConfig ballast's identity labels.
func identityLabels(ctx context.Context, c client.Reader) ([]string, error) {
	bc := &ballastv1.BallastConfig{}
	if err := c.Get(ctx, client.ObjectKey{Name: ballastv1.BallastConfigName}, bc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errNoConfig
		}
		return nil, fmt.Errorf("reading BallastConfig %s: %w", ballastv1.BallastConfigName, err)
	}
	return bc.Spec.IdentityLabels, nil
}

// policyInfo is one policy as the resolver sees it: compiled when valid, else the reason.
type policyInfo struct {
	Kind, Namespace, Name string
	Priority              int32
	Compiled              *policy.Compiled // nil when invalid
	Invalid               string           // validation error, empty when valid
}

func (p policyInfo) ref() string {
	if p.Namespace != "" {
		return p.Kind + " " + p.Namespace + "/" + p.Name
	}
	return p.Kind + " " + p.Name
}

// policies lists and compiles the ClusterResourcePolicies and, when namespace is not
// empty, the ResourcePolicies of namespace, exactly as admission does (policy.Compile*).
func policies(ctx context.Context, c client.Reader, namespace string) ([]policyInfo, error) {
	var out []policyInfo
	crps := &ballastv1.ClusterResourcePolicyList{}
	if err := c.List(ctx, crps); err != nil {
		return nil, fmt.Errorf("listing ClusterResourcePolicies: %w", err)
	}
	for i := range crps.Items {
		p := &crps.Items[i]
		comp, err := policy.CompileCluster(p)
		out = append(out, info(ballastv1.KindClusterResourcePolicy, "", p.Name, p.Spec.Priority, comp, err))
	}
	if namespace != "" {
		// The cluster's ResourcePolicy floors, as the control plane applies them; the
		// defaults when BallastConfig cannot be read.
		var spec *ballastv1.BallastConfigSpec
		cfg := &ballastv1.BallastConfig{}
		if err := c.Get(ctx, client.ObjectKey{Name: ballastv1.BallastConfigName}, cfg); err == nil {
			spec = &cfg.Spec
		}
		floors, _ := policy.FloorsOf(spec)
		rps := &ballastv1.ResourcePolicyList{}
		if err := c.List(ctx, rps, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("listing ResourcePolicies of %s: %w", namespace, err)
		}
		for i := range rps.Items {
			p := &rps.Items[i]
			comp, err := policy.CompileNamespaced(p, floors)
			out = append(out, info(ballastv1.KindResourcePolicy, p.Namespace, p.Name, p.Spec.Priority, comp, err))
		}
	}
	return out, nil
}

func info(kind, ns, name string, prio int32, comp *policy.Compiled, err error) policyInfo {
	pi := policyInfo{Kind: kind, Namespace: ns, Name: name, Priority: prio, Compiled: comp}
	if err != nil {
		pi.Compiled, pi.Invalid = nil, err.Error()
	}
	return pi
}

func compiledOf(ps []policyInfo) []*policy.Compiled {
	var out []*policy.Compiled
	for _, p := range ps {
		if p.Compiled != nil {
			out = append(out, p.Compiled)
		}
	}
	return out
}

// ownerLookup reads ReplicaSet and Job owners live, for policy.TopLevel.
func ownerLookup(ctx context.Context, c client.Reader) policy.OwnerLookup {
	return func(kind, namespace, name string) ([]metav1.OwnerReference, bool) {
		var obj client.Object
		switch kind {
		case "ReplicaSet":
			obj = &appsv1.ReplicaSet{}
		case "Job":
			obj = &batchv1.Job{}
		default:
			return nil, false
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			return nil, false
		}
		return obj.GetOwnerReferences(), true
	}
}

// binding is what admission and the enrollment controller compute for a pod (SPEC §3).
type binding struct {
	Kind, Name, ControllerKind string // top-level workload and direct controller kind
	Policy                     *policy.Compiled
	TupleLabels                map[string]string
	SelectorLabels             map[string]string
	ProfileName                string
	MeasurementHash            string
}

// bind resolves pod with the same pure functions admission uses: the owner walk
// (policy.TopLevel), then bindFacts.
func bind(pod *corev1.Pod, lookup policy.OwnerLookup, idLabels []string, cands []*policy.Compiled) binding {
	kind, name, ctrl := policy.TopLevel(pod.Name, pod.Namespace, pod.OwnerReferences, lookup)
	return bindFacts(policy.PodFacts{Namespace: pod.Namespace, Labels: pod.Labels,
		Annotations: pod.Annotations, Kind: kind, ControllerKind: ctrl}, name, idLabels, cands)
}

// bindFacts resolves the policy with policy.Resolve over the compiled candidates and
// computes tuple, profile name and measurementHash with pkg/identity (SPEC §3.2–§3.7).
func bindFacts(f policy.PodFacts, workload string, idLabels []string, cands []*policy.Compiled) binding {
	win := policy.Resolve(cands, f)
	tuple, selector := identity.Tuple(idLabels, f.Labels)
	disc, key := ballastv1.NoPolicy, ""
	if win != nil {
		disc, key = win.Discriminator(), win.Key()
	}
	return binding{Kind: f.Kind, Name: workload, ControllerKind: f.ControllerKind, Policy: win,
		TupleLabels: tuple, SelectorLabels: selector,
		ProfileName:     identity.ProfileName(idLabels, tuple, selector, disc),
		MeasurementHash: identity.MeasurementHash(idLabels, selector, key)}
}

// enrolled reports whether pod is a live enrolled pod.
func enrolled(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && ballastv1.ValidMode(pod.Labels[ballastv1.ModeLabel])
}

// longRunning returns the long-running containers of pod as sizing.LongRunning lists them:
// native sidecars then regular containers (SPEC §6.2).
func longRunning(spec *corev1.PodSpec) []corev1.Container {
	refs := sizing.LongRunning(spec)
	out := make([]corev1.Container, 0, len(refs))
	for _, r := range refs {
		out = append(out, *r.Container(spec))
	}
	return out
}
