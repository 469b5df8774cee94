package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Understudy phases (SPEC §15.1).
const (
	UnderstudyIdle        = "Idle"
	UnderstudySurging     = "Surging"
	UnderstudyReleasing   = "Releasing"
	UnderstudyRelaxed     = "Relaxed"
	UnderstudyUnsupported = "Unsupported"
)

// Understudy hold modes (SPEC §15.1).
const (
	HoldAlways        = "always"
	HoldVoluntaryOnly = "voluntary-only"
	HoldOff           = "off"
)

// Understudy condition types and names (SPEC §15).
const (
	ConditionSupported = "Supported"

	// EvictionWebhookName and EvictionWebhookPath are the validating eviction webhook's.
	EvictionWebhookName = "veviction.ballast.tightlinesoftware.com"
	EvictionWebhookPath = "/validate-v1-pod-eviction"
	// PodDeletionCostAnnotation steers a ReplicaSet's scale-down (Kubernetes' own key).
	PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
	// DoomedPodDeletionCost is the cost set on the doomed pod before a surge.
	DoomedPodDeletionCost = "-1000"
	// KindDeployment is the only target kind an Understudy supports.
	KindDeployment = "Deployment"
)

// UnderstudyTargetRef names the protected workload in the Understudy's namespace.
type UnderstudyTargetRef struct {
	// Kind of the target; only Deployment is supported (anything else is Unsupported).
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Name of the target in the Understudy's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// UnderstudySpec is the desired protection of one singleton Deployment.
type UnderstudySpec struct {
	// TargetRef is the protected workload; immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="targetRef is immutable"
	TargetRef UnderstudyTargetRef `json:"targetRef"`
	// SurgeReplicas are the stand-ins added during a surge.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	SurgeReplicas int32 `json:"surgeReplicas,omitempty"`
	// MinSurgeTimeSeconds: a known deadline closer than this releases at once.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=0
	MinSurgeTimeSeconds *int32 `json:"minSurgeTimeSeconds,omitempty"`
	// ReadinessDeadlineSeconds: no Ready stand-in this long after the surge relaxes the hold.
	// At most one hour: a stand-in not Ready by then will not be, and a longer hold only
	// blocks the drain (ballast-control also clamps it to --understudy-max-hold).
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	ReadinessDeadlineSeconds int32 `json:"readinessDeadlineSeconds,omitempty"`
	// HoldMode says whether evictions are held; the surge happens in every mode.
	// +optional
	// +kubebuilder:default=always
	// +kubebuilder:validation:Enum=always;voluntary-only;off
	HoldMode string `json:"holdMode,omitempty"`
}

// UnderstudyStatus is the observed state of the protection.
type UnderstudyStatus struct {
	// Phase is where the protection stands: Idle, Surging (a stand-in is being raised),
	// Releasing (the stand-in is Ready, the next eviction is allowed), Relaxed (a bound
	// released the hold) or Unsupported (the target cannot be protected; see Supported).
	// +optional
	// +kubebuilder:validation:Enum=Idle;Surging;Releasing;Relaxed;Unsupported
	Phase string `json:"phase,omitempty"`
	// Mode is the effective hold mode.
	// +optional
	Mode string `json:"mode,omitempty"`
	// LastSurgeTime is when the last surge started.
	// +optional
	LastSurgeTime *metav1.Time `json:"lastSurgeTime,omitempty"`
	// LastReleaseTime is when the last surge ended with the target back at its original replica count.
	// +optional
	LastReleaseTime *metav1.Time `json:"lastReleaseTime,omitempty"`
	// LastEvictionSurgeTime is when the last surge started on an eviction request alone (the
	// pod's node carried no doom signal); such surges are rate-limited per Understudy.
	// +optional
	LastEvictionSurgeTime *metav1.Time `json:"lastEvictionSurgeTime,omitempty"`
	// BlockedSince is the time of the oldest held eviction; omitted when none is held.
	// +optional
	BlockedSince *metav1.Time `json:"blockedSince,omitempty"`
	// OriginalReplicas is the target's replica count, persisted before any surge.
	// +optional
	OriginalReplicas *int32 `json:"originalReplicas,omitempty"`
	// DoomedPod is the pod the current surge replaces (empty when idle).
	// +optional
	DoomedPod string `json:"doomedPod,omitempty"`
	// DoomedNode is the node whose doom started the current surge.
	// +optional
	DoomedNode string `json:"doomedNode,omitempty"`
	// DoomClass is voluntary or involuntary for the current surge.
	// +optional
	DoomClass string `json:"doomClass,omitempty"`
	// DoomDeadline is the doom signal's deadline when one is known.
	// +optional
	DoomDeadline *metav1.Time `json:"doomDeadline,omitempty"`
	// ObservedGeneration is the generation of the spec this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready and Supported.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Understudy protects a singleton Deployment across node disruptions (SPEC §15).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,path=understudies,categories=ballast
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Blocked",type=date,JSONPath=`.status.blockedSince`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Understudy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec UnderstudySpec `json:"spec"`
	// +optional
	Status UnderstudyStatus `json:"status,omitempty"`
}

// UnderstudyList is a list of Understudies.
//
// +kubebuilder:object:root=true
type UnderstudyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Understudy `json:"items"`
}

// UnderstudyMinSurgeTime returns spec.minSurgeTimeSeconds with the schema default for
// objects that never went through the API server.
func UnderstudyMinSurgeTime(s UnderstudySpec) int32 {
	if s.MinSurgeTimeSeconds == nil {
		return 60
	}
	return *s.MinSurgeTimeSeconds
}

// UnderstudyHoldMode returns spec.holdMode with the schema default.
func UnderstudyHoldMode(s UnderstudySpec) string {
	if s.HoldMode == "" {
		return HoldAlways
	}
	return s.HoldMode
}

// UnderstudySurge returns spec.surgeReplicas with the schema default.
func UnderstudySurge(s UnderstudySpec) int32 {
	if s.SurgeReplicas < 1 {
		return 1
	}
	return s.SurgeReplicas
}

// UnderstudyReadinessDeadline returns spec.readinessDeadlineSeconds with the schema default.
func UnderstudyReadinessDeadline(s UnderstudySpec) int32 {
	if s.ReadinessDeadlineSeconds < 1 {
		return 600
	}
	return s.ReadinessDeadlineSeconds
}
