// Package metrics holds the control-plane instrument more than one component records:
// ballast_recommendation_clamped_total, written by admission (phase "admission") and by
// resize (phase "resize"). Every other instrument of SPEC §11.2 lives in the metrics.go of
// the controller that records it (config: kill switch; policies; enrollment; profiles;
// webhook). Sampling happens in the node agent, so ballast.samples.collected and
// ballast.fetch.errors are the agent's ballast_node_samples_total and
// ballast_node_source_errors_total (see docs/node-agent.md).
package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Phases of ballast_recommendation_clamped_total.
const (
	PhaseAdmission = "admission"
	PhaseResize    = "resize"
)

// Shared are the instruments recorded by more than one component.
type Shared struct {
	// Clamped is ballast_recommendation_clamped_total{container, resource, policy,
	// namespace, phase, profile}.
	Clamped *prometheus.CounterVec
}

// NewShared creates the instruments and registers them with reg (controller-runtime's
// registry in the binary, a fresh registry in tests).
func NewShared(reg prometheus.Registerer) *Shared {
	m := &Shared{Clamped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ballast_recommendation_clamped_total",
		Help: "Requests clamped to their limit."}, []string{"container", "resource", "policy", "namespace", "phase", "profile"})}
	reg.MustRegister(m.Clamped)
	return m
}

// KnownProfile returns name when the cache holds a WorkloadProfile of that name, else "".
// A profile attribute carries only names of profiles that exist, never one taken from a
// caller (a pod's profile-ref annotation, a name computed from the labels of a pod no
// profile was made for): the series count then follows the profile lifecycle (created per
// enrolled identity, deleted after the orphan TTL), not what callers send.
func KnownProfile(ctx context.Context, r client.Reader, name string) string {
	if name == "" {
		return ""
	}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &ballastv1.WorkloadProfile{}); err != nil {
		return ""
	}
	return name
}

// KnownNamespace returns namespace when the cache's Namespace metadata informer holds it,
// else "": a forged AdmissionReview cannot mint a namespace label. The API server admits
// pods only in namespaces that exist, so real admissions keep their namespace.
func KnownNamespace(ctx context.Context, r client.Reader, namespace string) string {
	if namespace == "" {
		return ""
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Get(ctx, client.ObjectKey{Name: namespace}, m); err != nil {
		return ""
	}
	return namespace
}
