package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ResourcePolicySpec is the spec shared by ClusterResourcePolicy and ResourcePolicy (SPEC §2.3).
// No field has a schema default: blanks get their resolve-time defaults in memory
// (DefaultPolicySpec) and the stored object shows only what its author wrote.
type ResourcePolicySpec struct {
	// Priority orders policies of the same kind; higher wins.
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// +optional
	Selector PolicySelector `json:"selector,omitzero"`

	// Metrics maps (resource, field) to a statistic of a source. Resources not listed are never touched.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Metrics []MetricSpec `json:"metrics,omitempty"`

	// +optional
	Readiness Readiness `json:"readiness,omitzero"`

	// +optional
	Behaviors Behaviors `json:"behaviors,omitzero"`

	// MinAllowed is the smallest value Ballast writes per resource (cpu, memory,
	// ephemeral-storage), in the style of the VPA's container policies: a recommendation
	// below it is raised to it, and reported. Quantities such as "10m" or "32Mi".
	// +optional
	// +kubebuilder:validation:MaxProperties=3
	MinAllowed map[string]string `json:"minAllowed,omitempty"`

	// MaxAllowed is the largest value Ballast writes per resource: a recommendation above
	// it is capped to it, and reported. Independently of it, no value above the largest
	// node's allocatable is written.
	// +optional
	// +kubebuilder:validation:MaxProperties=3
	MaxAllowed map[string]string `json:"maxAllowed,omitempty"`

	// Runtime names the memory profile of the governed containers' runtime. With a runtime
	// whose heap is set by an option (jvm -Xmx/MaxRAMPercentage, go GOMEMLIMIT, node
	// --max-old-space-size) the memory recommendation is never below the floor that option
	// implies; jvm memory is never shrunk in place (restart only) and its memory headroom
	// defaults to 1.25. Absent means generic: no floor, no hold.
	// +optional
	Runtime RuntimeSpec `json:"runtime,omitzero"`

	// PodLevel says what Ballast does with pods that carry pod-level spec.resources:
	// keep (default) leaves them as written and keeps container changes within them;
	// size sets them from the sum of the containers' sized values, with the QoS class kept.
	// +optional
	// +kubebuilder:validation:Enum=keep;size
	PodLevel string `json:"podLevel,omitempty"`
}

// RuntimeSpec is the memory profile of a policy's containers.
type RuntimeSpec struct {
	// Type is generic, jvm, go, node, python or auto (detected per container from its
	// environment and arguments: JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS or -Xmx ⇒ jvm,
	// GOMEMLIMIT ⇒ go, NODE_OPTIONS or --max-old-space-size ⇒ node, else generic).
	// python sizes like generic. Blank means generic.
	// +optional
	// +kubebuilder:validation:Enum=generic;jvm;go;node;python;auto
	Type string `json:"type,omitempty"`

	// Margin is added to a runtime floor, as a percentage such as "5%"; blank means 5%.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)%?$')",message="margin must be a percentage such as 5%"
	Margin string `json:"margin,omitempty"`
}

// PolicySelector narrows the pods a policy governs. Every part must match.
type PolicySelector struct {
	// Kinds of the top-level workload (or of the direct controller, for ReplicaSet and Job).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Kinds []string `json:"kinds,omitempty"`

	// +optional
	Namespaces NamespaceSelector `json:"namespaces,omitzero"`

	// Annotations: every key must exist on the pod and its value match the pattern
	// (exact string, or a full-string RE2 regex written /…/).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// LabelSelector on pod labels.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// NamespaceSelector includes and excludes namespaces by pattern (exact, or /regex/).
type NamespaceSelector struct {
	// Include lists the namespaces governed (exact names or /regex/); empty means all.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	Include []string `json:"include,omitempty"`
	// Exclude lists namespaces never governed, even when included.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	Exclude []string `json:"exclude,omitempty"`
}

// MetricSpec maps one (resource, field) to an aggregation of a source's samples.
type MetricSpec struct {
	// Resource is cpu, memory or ephemeral-storage; anything else makes the policy invalid.
	// +required
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`

	// Field is request or limit.
	// +required
	// +kubebuilder:validation:Enum=request;limit
	Field string `json:"field"`

	// Source names a MetricsSource.
	// +required
	// +kubebuilder:validation:MinLength=1
	Source string `json:"source"`

	// Aggregation is the statistic of the source's samples: p50, p75, p90, p95, p99, max or avg.
	// +required
	// +kubebuilder:validation:Enum=p50;p75;p90;p95;p99;max;avg
	Aggregation string `json:"aggregation"`

	// Headroom multiplies the statistic: a decimal > 0 such as "1.25"; blank means 1.0.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)$')",message="headroom must be a decimal such as 1.25"
	Headroom string `json:"headroom,omitempty"`
}

// Readiness gates recommendations of a (container, resource).
type Readiness struct {
	// MinDataPoints is the number of retained samples a series needs; blank means 500.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinDataPoints int64 `json:"minDataPoints,omitempty"`
	// MinTimeSpan is how long a series must span, a Go duration such as "24h"; blank means 24h.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$')",message="minTimeSpan must be a Go duration such as 24h or 90m"
	MinTimeSpan string `json:"minTimeSpan,omitempty"`
	// MaxCV is the largest coefficient of variation (stdDev / mean) a ready series may have,
	// a decimal such as "1.5".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)$')",message="maxCV must be a decimal such as 1.5"
	MaxCV string `json:"maxCV,omitempty"`
	// CVMeanFloor skips the CV gate for series whose mean is below the floor. Absent means
	// the built-in floors; an explicit {} disables every floor.
	// +optional
	CVMeanFloor map[string]string `json:"cvMeanFloor,omitzero"`
}

// Behaviors tune drift thresholds and resize pacing.
type Behaviors struct {
	// +optional
	Thresholds Thresholds `json:"thresholds,omitzero"`
	// +optional
	Resize ResizeBehavior `json:"resize,omitzero"`
	// StartupBoost raises the cpu of a pod in apply or resize mode at admission and lowers
	// it in place once the pod has been Ready for readyFor. Absent means no boost.
	// +optional
	StartupBoost *StartupBoost `json:"startupBoost,omitempty"`
	// HPA says what Ballast does when a HorizontalPodAutoscaler (autoscaling/v2) scales the
	// pod's owner (its Deployment, StatefulSet or ReplicaSet, by scaleTargetRef) on a
	// resource's utilization, which is usage divided by the request: moving that request
	// moves the HPA's scale point. `preserve` (the default) leaves such requests (and their
	// limits) as they are, sizes the other resources, and reports it (event HPAConflict,
	// annotation preserved-by-hpa); `scale-target` sizes them and patches the HPA's
	// averageUtilization so request × utilization stays what it was (needs the chart value
	// hpa.scaleTarget, which grants the patch); `ignore` sizes them as if no HPA existed.
	// +optional
	// +kubebuilder:validation:Enum=preserve;scale-target;ignore
	HPA string `json:"hpa,omitempty"`
}

// StartupBoost is extra cpu for a pod's start (JIT warm-up, caches, migrations), taken
// back in place once the pod has been Ready for ReadyFor. Only cpu is boosted: taking cpu
// back in place is safe (a cpu limit throttles, it never kills), while shrinking memory in
// place is the risky direction (a working set above the lowered limit is OOM-killed).
// Admission applies the boost only within the bounds every sized value respects
// (LimitRanges, quota headroom, policy maxAllowed, the largest node's allocatable); the
// boosted pod's total cpu request never exceeds the largest node's allocatable cpu.
type StartupBoost struct {
	// CPU is the boost: a multiplier such as "2x" (1 < x ≤ 10) applied to each
	// container's cpu request, and to its limit when it has one, or an absolute quantity
	// such as "2" or "1500m" the request is raised to (a container already at or above it
	// is left alone).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	CPU string `json:"cpu"`
	// ReadyFor is how long the pod must have been Ready before the boost is taken back, a
	// Go duration such as "60s". Blank means 60s.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$')",message="readyFor must be a Go duration such as 60s"
	ReadyFor string `json:"readyFor,omitempty"`
}

// Values of behaviors.hpa.
const (
	HPAPreserve    = "preserve"
	HPAScaleTarget = "scale-target"
	HPAIgnore      = "ignore"
	// DefaultHPA is the resolve-time default of behaviors.hpa.
	DefaultHPA = HPAPreserve
)

// Thresholds are percentage strings ("15%" or "15").
type Thresholds struct {
	// Default is the drift, as a percentage, below which a recommendation is not applied.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)%?$')",message="a threshold must be a percentage such as 10% or 10"
	Default string `json:"default,omitempty"`
	// Resize overrides Default for in-place resizes.
	// +optional
	Resize ResizeThresholds `json:"resize,omitzero"`
}

// ResizeThresholds override the global threshold for resize.
type ResizeThresholds struct {
	// Default is the resize drift threshold, as a percentage.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)%?$')",message="a threshold must be a percentage such as 10% or 10"
	Default string `json:"default,omitempty"`
	// ResourceThresholds override Default per resource and field.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	ResourceThresholds map[string]FieldThresholds `json:"resourceThresholds,omitempty"`
}

// FieldThresholds are per-field percentage strings.
type FieldThresholds struct {
	// Request is the drift threshold of the request, as a percentage.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)%?$')",message="a threshold must be a percentage such as 10% or 10"
	Request string `json:"request,omitempty"`
	// Limit is the drift threshold of the limit, as a percentage.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)%?$')",message="a threshold must be a percentage such as 10% or 10"
	Limit string `json:"limit,omitempty"`
}

// ResizeBehavior paces in-place resizes.
type ResizeBehavior struct {
	// MaxChangePerCycle caps how far one resize moves a value toward its recommendation, as a
	// percentage of the gap.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)%?$')",message="maxChangePerCycle must be a percentage such as 50% or 50"
	MaxChangePerCycle string `json:"maxChangePerCycle,omitempty"`
	// Interval is the least time between two resizes of a pod, a Go duration such as "15m".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$')",message="interval must be a Go duration such as 15m"
	Interval string `json:"interval,omitempty"`
	// Cooldown is how long after an OOM kill, a memory-pressure raise or a raise-back of a
	// workload no pod of that workload is shrunk, a Go duration such as "1h" (default 1h).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$')",message="cooldown must be a Go duration such as 1h"
	Cooldown string `json:"cooldown,omitempty"`
	// MaxConcurrentResizes caps the disruptive resizes (those that restart a container: a
	// RestartContainer resizePolicy on a changed resource, or a runtime that must restart to
	// shrink memory) in flight at once, per workload and per node. Disruptive resizes also
	// respect the pod's PodDisruptionBudgets.
	// +optional
	MaxConcurrentResizes *MaxConcurrentResizes `json:"maxConcurrentResizes,omitempty"`
}

// MaxConcurrentResizes caps disruptive in-place resizes in flight.
type MaxConcurrentResizes struct {
	// PerWorkload is the most disruptive resizes in flight per workload (top-level owner):
	// a whole number ("2") or a percentage of the workload's resize-mode pods ("10%",
	// rounded down, at least 1). Default "10%".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PerWorkload string `json:"perWorkload,omitempty"`
	// PerNode is the most disruptive resizes in flight per node; unset means no cap.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PerNode *int32 `json:"perNode,omitempty"`
}

// ResourcePolicyStatus is written by Ballast.
type ResourcePolicyStatus struct {
	// ProfileDiscriminator is this policy's part of every profile name it governs.
	// +optional
	ProfileDiscriminator string `json:"profileDiscriminator,omitempty"`

	// Priority is spec.priority as Ballast resolves it (0 when not written), so that
	// `kubectl get` shows 0 rather than a blank.
	// +optional
	Priority int32 `json:"priority"`

	// Conditions: Valid, and ProfilesTakenOver (True while profiles with history, accrued
	// under another policy, have pods that now resolve to this one).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterResourcePolicy governs enrolled pods in every namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,path=clusterresourcepolicies
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.status.priority`
// +kubebuilder:printcolumn:name="Discriminator",type=string,JSONPath=`.status.profileDiscriminator`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=='Valid')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterResourcePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ResourcePolicySpec `json:"spec"`
	// +optional
	Status ResourcePolicyStatus `json:"status,omitzero"`
}

// ClusterResourcePolicyList is a list of ClusterResourcePolicy.
// +kubebuilder:object:root=true
type ClusterResourcePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterResourcePolicy `json:"items"`
}

// ResourcePolicy governs enrolled pods of its own namespace and beats any ClusterResourcePolicy.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,path=resourcepolicies
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.status.priority`
// +kubebuilder:printcolumn:name="Discriminator",type=string,JSONPath=`.status.profileDiscriminator`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=='Valid')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourcePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ResourcePolicySpec `json:"spec"`
	// +optional
	Status ResourcePolicyStatus `json:"status,omitzero"`
}

// ResourcePolicyList is a list of ResourcePolicy.
// +kubebuilder:object:root=true
type ResourcePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourcePolicy `json:"items"`
}
