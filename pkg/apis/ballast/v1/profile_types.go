package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Profile states.
const (
	StateAccruing   = "Accruing"
	StateSufficient = "Sufficient"
)

// Condition types and reasons written by Ballast.
const (
	ConditionValid    = "Valid"
	ConditionReady    = "Ready"
	ConditionOrphaned = "Orphaned"
	// ConditionSufficient is True when every considered (container, resource) meets its
	// readiness targets; its message says, in one line, what is still missing.
	ConditionSufficient = "Sufficient"
	// ConditionAgentCoverage is present while some bound pods run on nodes without a live
	// node agent; always False, its reason says whether the metrics.k8s.io fallback measures
	// them (MeasuredThroughMetricsAPI) or nothing does (MetricsAPIUnavailable,
	// FallbackDisabled).
	ConditionAgentCoverage = "AgentCoverage"
	// ConditionStale is True while a profile serves recommendations the store can no
	// longer back: the store lost its history (reason StoreReset) and the last good
	// recommendations are kept until the history re-accrues; removed then.
	ConditionStale = "Stale"
	// ConditionStoreFull is True while the store refuses writes for lack of memory (used
	// memory at its maxmemory): node agents keep their windows buffered and retry, and no
	// new history is recorded. Its message gives the used and maximum bytes. Removed once
	// the store accepts writes again.
	ConditionStoreFull = "StoreFull"
	// ConditionRecommendationBounded is True while a recommendation of the profile is not
	// followed as computed but capped, because one node's samples disagree strongly with
	// the other nodes' samples of the same series (reason OutlierNode, the message naming
	// the node, resource and both figures); removed when no node disagrees.
	ConditionRecommendationBounded = "RecommendationBounded"
	// ConditionBackfilled is present once ballast-control (with --history-prometheus-url)
	// tried to give a new profile day-0 history from Prometheus. True, reason Backfilled:
	// the samples were written into the store once (message "history: backfilled N days
	// from Prometheus ..."), and readiness counts them like any other. False: nothing was
	// written and the profile accrues as without it; the reason says why (NoHistory,
	// PrometheusUnavailable, BadAnswer, StoreError) and the message gives the error.
	ConditionBackfilled = "Backfilled"

	ReasonValid             = "Valid"
	ReasonSamplesCollected  = "SamplesCollected"
	ReasonMissingSamples    = "MissingSamples"
	ReasonPolicyInvalid     = "PolicyInvalid"
	ReasonNoActiveWorkloads = "NoActiveWorkloads"
	ReasonReadinessMet      = "ReadinessMet"
	ReasonAccruing          = "Accruing"

	ReasonMeasuredThroughMetricsAPI = "MeasuredThroughMetricsAPI"
	ReasonMetricsAPIUnavailable     = "MetricsAPIUnavailable"
	ReasonFallbackDisabled          = "FallbackDisabled"
	ReasonStoreReset                = "StoreReset"
	// ReasonMaxMemoryReached is StoreFull's reason.
	ReasonMaxMemoryReached = "MaxMemoryReached"

	// Backfilled's reasons (pkg/control/backfill's results).
	ReasonBackfilled            = "Backfilled"
	ReasonBackfillNoHistory     = "NoHistory"
	ReasonPrometheusUnavailable = "PrometheusUnavailable"
	ReasonBackfillBadAnswer     = "BadAnswer"
	ReasonBackfillStoreError    = "StoreError"
)

// Policy kinds as they appear in PolicyRef.
const (
	KindClusterResourcePolicy = "ClusterResourcePolicy"
	KindResourcePolicy        = "ResourcePolicy"
)

// PolicyRef names the governing policy of a profile.
// +kubebuilder:validation:XValidation:rule="self.kind == 'ResourcePolicy' ? (has(self.__namespace__) && size(self.__namespace__) > 0) : (!has(self.__namespace__) || size(self.__namespace__) == 0)",message="namespace is required for a ResourcePolicy and must be empty for a ClusterResourcePolicy"
type PolicyRef struct {
	// Kind is ClusterResourcePolicy or ResourcePolicy.
	// +required
	// +kubebuilder:validation:Enum=ClusterResourcePolicy;ResourcePolicy
	Kind string `json:"kind"`
	// Namespace of a ResourcePolicy; empty for a ClusterResourcePolicy.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the policy.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// UsageStats are the statistics of one series, rendered per SPEC §2.4 display formats.
type UsageStats struct {
	// Resource is cpu, memory or ephemeral-storage.
	// +required
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`
	// Source is the MetricsSource the samples came from.
	// +required
	Source string `json:"source"`
	// Samples is the number of retained samples.
	// +optional
	Samples int64 `json:"samples,omitempty"`
	// TimeSpan is the time between the oldest and newest retained sample ("24h5m0s").
	// +optional
	TimeSpan string `json:"timeSpan,omitempty"`
	// P50 is the median: cpu in millicores ("230m"), bytes as "176.00Mi".
	// +optional
	P50 string `json:"p50,omitempty"`
	// P75 is the 75th percentile, in the units of p50.
	// +optional
	P75 string `json:"p75,omitempty"`
	// P90 is the 90th percentile, in the units of p50.
	// +optional
	P90 string `json:"p90,omitempty"`
	// P95 is the 95th percentile, in the units of p50.
	// +optional
	P95 string `json:"p95,omitempty"`
	// P99 is the 99th percentile, in the units of p50.
	// +optional
	P99 string `json:"p99,omitempty"`
	// Max is the largest sample, in the units of p50.
	// +optional
	Max string `json:"max,omitempty"`
	// Mean is the average sample, in the units of p50.
	// +optional
	Mean string `json:"mean,omitempty"`
	// StdDev is the standard deviation, in the units of p50.
	// +optional
	StdDev string `json:"stdDev,omitempty"`
	// CV is the coefficient of variation, stdDev / mean ("0.117").
	// +optional
	CV string `json:"cv,omitempty"`
	// LastUpdated is when the statistics were computed.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
}

// Recommendation holds the recommended request and limit of one resource.
type Recommendation struct {
	// Request is the recommended request: cpu in millicores ("226m"), memory and
	// ephemeral-storage rounded up to a whole MiB ("162Mi").
	// +optional
	Request string `json:"request,omitempty"`
	// Limit is the recommended limit, in the same units as request.
	// +optional
	Limit string `json:"limit,omitempty"`
	// RequestBasis says where request comes from ("avg 180m × 1.25 = 226m").
	// +optional
	RequestBasis string `json:"requestBasis,omitempty"`
	// LimitBasis says where limit comes from ("p99 192.00Mi × 1.2 = 230.40Mi, rounded up to 231Mi").
	// +optional
	LimitBasis string `json:"limitBasis,omitempty"`
}

// ResourceReadiness says how far one series of a container is from the policy's readiness
// targets (SPEC §4.3). Each field is "have/need"; a field is empty when its gate is not
// evaluated (no series yet, or the mean is below the cv floor for cv).
type ResourceReadiness struct {
	// Resource is cpu, memory or ephemeral-storage.
	// +required
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`
	// Ready is true when every gate is met.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// Samples is "retained samples/minDataPoints" ("120/250").
	// +optional
	Samples string `json:"samples,omitempty"`
	// TimeSpan is "span of the samples/minTimeSpan" ("1h0m0s/24h0m0s").
	// +optional
	TimeSpan string `json:"timeSpan,omitempty"`
	// CV is "coefficient of variation/maxCV" ("0.412/1.500"), or "waived: mean below floor".
	// +optional
	CV string `json:"cv,omitempty"`
	// SourceError is why the series could not be read or has no samples.
	// +optional
	SourceError string `json:"sourceError,omitempty"`
	// Missing is what is still missing, in one line ("130 more samples, 23h more span").
	// +optional
	Missing string `json:"missing,omitempty"`
}

// ContainerProfile is the pooled data of one container name.
type ContainerProfile struct {
	// Name is the container name.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// LastSeen is the time of the newest retained sample of this container.
	// +optional
	LastSeen *metav1.Time `json:"lastSeen,omitempty"`
	// UsageStats are the statistics of each series, sorted by resource.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	UsageStats []UsageStats `json:"usageStats,omitempty"`
	// Recommendations by resource.
	// +optional
	Recommendations map[string]Recommendation `json:"recommendations,omitempty"`
	// Readiness of each resource the policy names, against its targets, sorted by resource.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=resource
	Readiness []ResourceReadiness `json:"readiness,omitempty"`
}

// FallbackStatus says how much of a profile's history came through the fallback source:
// metrics.k8s.io, read by the control plane for pods on nodes without a live node agent.
// Those samples come at the metrics API's resolution (metrics-server: 60s by default), not
// the node agent's, so such a profile needs longer to pass the same readiness gates.
type FallbackStatus struct {
	// Samples is the number of retained container usage samples that came through the
	// fallback.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Samples int64 `json:"samples,omitempty"`
	// Share is Samples as a percentage of every retained container usage sample ("12.5%").
	// +optional
	Share string `json:"share,omitempty"`
	// Resolution is the coarsest metrics.k8s.io resolution among those samples.
	// +optional
	Resolution *metav1.Duration `json:"resolution,omitempty"`
	// UncoveredPods counts the bound pods on nodes without a live node agent at the last
	// collection cycle (see the AgentCoverage condition).
	// +optional
	// +kubebuilder:validation:Minimum=0
	UncoveredPods int32 `json:"uncoveredPods,omitempty"`
}

// ResizeSummary counts the bound pods in each pending resize state.
type ResizeSummary struct {
	// DeferredPods counts bound pods whose in-place resize the kubelet deferred.
	// +optional
	DeferredPods int32 `json:"deferredPods,omitempty"`
	// InfeasiblePods counts bound pods whose in-place resize the kubelet found infeasible.
	// +optional
	InfeasiblePods int32 `json:"infeasiblePods,omitempty"`
	// OldestDeferredSince is when the longest-deferred resize was deferred.
	// +optional
	OldestDeferredSince *metav1.Time `json:"oldestDeferredSince,omitempty"`
}

// Resize history kinds (WorkloadProfileStatus.ResizeHistory).
const (
	ResizeHistoryShrink    = "shrink"
	ResizeHistoryRaise     = "raise"
	ResizeHistoryRaiseBack = "raise-back"
	ResizeHistoryOOM       = "oom"
	ResizeHistoryPressure  = "pressure"
)

// ResizeHistoryEntry is one resize, or one event that starts the shrink cooldown, of a
// workload bound to the profile.
type ResizeHistoryEntry struct {
	// Time is when it happened.
	// +required
	Time metav1.Time `json:"time"`
	// Kind is shrink, raise, raise-back, oom or pressure.
	// +required
	// +kubebuilder:validation:Enum=shrink;raise;raise-back;oom;pressure
	Kind string `json:"kind"`
	// Workload is the pod's top-level workload, <namespace>/<Kind>/<name>.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Workload string `json:"workload,omitempty"`
	// Pod is the pod's name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod,omitempty"`
	// Container is the container, when one was named.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Container string `json:"container,omitempty"`
	// Resource is the resource, when one was named.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Resource string `json:"resource,omitempty"`
}

// WorkloadProfileStatus is the whole state of a profile; it has no spec.
type WorkloadProfileStatus struct {
	// TupleLabels maps each identity key to the pods' value (or the placeholder for missing values).
	// +optional
	TupleLabels map[string]string `json:"tupleLabels,omitempty"`
	// SelectorLabels maps each identity key to the pods' value, or --missing--.
	// +optional
	SelectorLabels map[string]string `json:"selectorLabels,omitempty"`
	// PolicyRef names the governing policy; absent when none matched.
	// +optional
	PolicyRef *PolicyRef `json:"policyRef,omitempty"`
	// MeasurementHash is the store namespace owned by this profile.
	// +optional
	MeasurementHash string `json:"measurementHash,omitempty"`
	// Containers are the pooled statistics, readiness and recommendations per container name.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Containers []ContainerProfile `json:"containers,omitempty"`
	// PodUsageStats are pod-level series (emptyDir); informational only.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	PodUsageStats []UsageStats `json:"podUsageStats,omitempty"`
	// MeetsThreshold is true when every considered container meets its readiness targets.
	// +optional
	MeetsThreshold bool `json:"meetsThreshold,omitempty"`
	// State is Accruing until every container meets its readiness targets, then Sufficient (see the Sufficient condition for what is missing).
	// +optional
	// +kubebuilder:validation:Enum=Accruing;Sufficient
	// +kubebuilder:default=Accruing
	State string `json:"state,omitempty"`
	// Summary is the recommendations of every container in one line, request/limit
	// ("app: cpu 300m, memory 192Mi/231Mi"); "-" while nothing is recommended.
	// +optional
	Summary string `json:"summary,omitempty"`
	// ActiveWorkloads counts the distinct top-level workloads among bound pods.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ActiveWorkloads int32 `json:"activeWorkloads,omitempty"`
	// ActivePods counts the bound pods.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ActivePods int32 `json:"activePods,omitempty"`
	// Resize counts bound pods in each pending in-place resize state.
	// +optional
	Resize ResizeSummary `json:"resize,omitzero"`
	// ResizeHistory are the resize controller's recent shrinks, raises and the OOM kills,
	// pressure raises and raise-backs that start a cooldown, oldest first (at most 256,
	// the oldest dropped). A new leader reads it so that it does not shrink again what the
	// previous one just raised back.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	ResizeHistory []ResizeHistoryEntry `json:"resizeHistory,omitempty"`
	// Fallback says which share of the samples came through metrics.k8s.io (pods on nodes
	// without a live node agent) and at what resolution; absent when every sample is
	// node-local and every pod is covered by an agent.
	// +optional
	Fallback *FallbackStatus `json:"fallback,omitempty"`
	// Conditions: Ready, Orphaned, Sufficient, AgentCoverage, Stale, StoreFull,
	// RecommendationBounded, and Backfilled (day-0 history read from Prometheus: True once
	// its samples were written, False with the reason nothing was).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=12
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkloadProfile is the pooled history, statistics and recommendations of one identity
// tuple under one policy. It is created and owned by Ballast.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,path=workloadprofiles
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="ActiveWorkloads",type=integer,JSONPath=`.status.activeWorkloads`
// +kubebuilder:printcolumn:name="ActivePods",type=integer,JSONPath=`.status.activePods`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.status.policyRef.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Recommendation",type=string,JSONPath=`.status.summary`
// +kubebuilder:printcolumn:name="Collecting",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`,description="Ready condition: every resource the policy names produced samples in the latest collection cycle (collection health, not readiness; see State)"
// +kubebuilder:printcolumn:name="Orphaned",type=string,JSONPath=`.status.conditions[?(@.type=='Orphaned')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Status WorkloadProfileStatus `json:"status,omitzero"`
}

// WorkloadProfileList is a list of WorkloadProfile.
// +kubebuilder:object:root=true
type WorkloadProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadProfile `json:"items"`
}
