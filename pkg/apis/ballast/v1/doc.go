// Package v1 holds the Ballast CRD types of group ballast.tightlinesoftware.com/v1, their
// resolve-time defaults as pure functions, the generated deep-copy code and the CRD
// manifests generated from these types (embedded, see CRDs).
//
// Defaulting happens in exactly one of three places (SPEC §2): schema defaults are markers
// here and are applied by the API server; resolve-time defaults are the Default* functions
// in defaults.go and are applied to in-memory copies only; compute-time defaults belong to
// the calculation that uses them.
//
// +kubebuilder:object:generate=true
// +groupName=ballast.tightlinesoftware.com
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every Ballast kind.
	GroupVersion = schema.GroupVersion{Group: "ballast.tightlinesoftware.com", Version: "v1"}

	// SchemeBuilder registers the Ballast kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the Ballast kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&BallastConfig{}, &BallastConfigList{},
		&MetricsSource{}, &MetricsSourceList{},
		&ClusterResourcePolicy{}, &ClusterResourcePolicyList{},
		&ResourcePolicy{}, &ResourcePolicyList{},
		&WorkloadProfile{}, &WorkloadProfileList{},
		&Understudy{}, &UnderstudyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
