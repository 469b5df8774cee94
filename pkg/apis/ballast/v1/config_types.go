package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BallastConfigSpec is the cluster-wide configuration (SPEC §2.1).
type BallastConfigSpec struct {
	// IdentityLabels are the ordered pod-label keys forming the identity tuple.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="every identity label must be a valid label key"
	// +listType=set
	IdentityLabels []string `json:"identityLabels"`

	// OrphanTTL is how long an Orphaned profile survives (Go duration).
	// +optional
	// +kubebuilder:default="168h"
	OrphanTTL string `json:"orphanTTL,omitempty"`

	// RetentionWindow bounds the samples used for statistics and kept in the store (Go duration).
	// +optional
	// +kubebuilder:default="168h"
	RetentionWindow string `json:"retentionWindow,omitempty"`

	// Suspended activates the kill switch.
	// +optional
	// +kubebuilder:default=false
	Suspended bool `json:"suspended,omitempty"`

	// PolicyFloors are the smallest values a namespaced ResourcePolicy may set; a
	// ResourcePolicy below a floor is invalid. ClusterResourcePolicies, which only the
	// cluster admin writes, are held only to Ballast's absolute floors.
	// +optional
	// +kubebuilder:default={}
	PolicyFloors PolicyFloors `json:"policyFloors,omitempty"`

	// Bounds caps every recommendation Ballast applies by the administrator's figures
	// instead of what nodes report about themselves (NodeBounds).
	// +optional
	Bounds *NodeBounds `json:"bounds,omitempty"`
}

// PolicyFloors bound what tenants set in a ResourcePolicy (SPEC §2.1, §3.3). Each field is
// defaulted by the schema; a value that does not parse counts as its default (warned once
// per change), and a value below Ballast's absolute floor counts as the absolute floor.
type PolicyFloors struct {
	// MinResizeInterval is the smallest behaviors.resize.interval (Go duration).
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:MaxLength=32
	MinResizeInterval string `json:"minResizeInterval,omitempty"`

	// MinTimeSpan is the smallest readiness.minTimeSpan (Go duration).
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:MaxLength=32
	MinTimeSpan string `json:"minTimeSpan,omitempty"`

	// MinThreshold is the smallest drift threshold, for every behaviors.thresholds value
	// (percentage, "1%" ≡ "1").
	// +optional
	// +kubebuilder:default="1%"
	// +kubebuilder:validation:MaxLength=32
	MinThreshold string `json:"minThreshold,omitempty"`
}

// BallastConfigStatus is intentionally empty.
type BallastConfigStatus struct{}

// BallastConfig is the cluster-scoped singleton named "ballast".
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,path=ballastconfigs
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspended`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BallastConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec BallastConfigSpec `json:"spec"`
	// +optional
	Status BallastConfigStatus `json:"status,omitempty"`
}

// BallastConfigList is a list of BallastConfig.
// +kubebuilder:object:root=true
type BallastConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BallastConfig `json:"items"`
}

// MetricsSourceSpec declares a sampling source (SPEC §2.2).
type MetricsSourceSpec struct {
	// Type is kubernetesMetrics (cpu, memory) or kubeletSummary (ephemeral-storage).
	// Unknown types are ignored by Ballast (and logged), not rejected.
	// +required
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`

	// +optional
	// +kubebuilder:default={}
	Config MetricsSourceConfig `json:"config,omitempty"`
}

// MetricsSourceConfig holds the cadence of a source.
type MetricsSourceConfig struct {
	// PollInterval is the sampling cadence this source contributes (Go duration).
	// +optional
	// +kubebuilder:default="60s"
	PollInterval string `json:"pollInterval,omitempty"`

	// ReservoirSize is accepted for compatibility; it never trims history.
	// +optional
	// +kubebuilder:default=10000
	// +kubebuilder:validation:Minimum=1
	ReservoirSize int64 `json:"reservoirSize,omitempty"`
}

// MetricsSourceStatus is intentionally empty.
type MetricsSourceStatus struct{}

// MetricsSource is a cluster-scoped sampling source referenced by policies.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,path=metricssources
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="PollInterval",type=string,JSONPath=`.spec.config.pollInterval`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MetricsSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MetricsSourceSpec `json:"spec"`
	// +optional
	Status MetricsSourceStatus `json:"status,omitempty"`
}

// MetricsSourceList is a list of MetricsSource.
// +kubebuilder:object:root=true
type MetricsSourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MetricsSource `json:"items"`
}
