package v1

// Names and constants of SPEC §1. Every component uses these; none spells them itself.
const (
	// Prefix is the label and annotation prefix of every Ballast key.
	Prefix = "ballast.tightlinesoftware.com/"

	// ModeLabel enrolls a pod: measure, apply or resize.
	ModeLabel = Prefix + "mode"
	// ResourceProfileLabel is the conventional optional identity label to split environments.
	ResourceProfileLabel = Prefix + "resource-profile"

	ModeMeasure = "measure"
	ModeApply   = "apply"
	ModeResize  = "resize"

	// ProfileRefAnnotation names the WorkloadProfile a pod is bound to.
	ProfileRefAnnotation = Prefix + "profile-ref"
	// PolicyRefAnnotation names the governing policy: <name> or <namespace>/<name>.
	PolicyRefAnnotation = Prefix + "policy-ref"
	// BoundedAnnotation records, on a pod sized at admission, the values its bounds capped,
	// clamped or held back (LimitRange, pod-level resources, quota, allowed range) and why.
	BoundedAnnotation = Prefix + "bounded"
	// PreservedByHPAAnnotation lists, on a pod, the resources whose requests Ballast left
	// as written because a HorizontalPodAutoscaler scales the pod's owner on their
	// utilization (behaviors.hpa: preserve): "cpu (hpa web, cpu utilization 60%)".
	PreservedByHPAAnnotation = Prefix + "preserved-by-hpa"
	// HPABaseAnnotationPrefix, followed by a metric's index in spec.metrics, holds on an HPA
	// the author's averageUtilization and the request it applied to before Ballast first
	// rescaled it (behaviors.hpa: scale-target): "60% of 500m".
	HPABaseAnnotationPrefix = Prefix + "hpa-base-"
	// RuntimeFloorAnnotation records, on a pod sized at admission, the runtime memory
	// floors that raised a recommendation ("app memory request 300Mi→590Mi (jvm …)").
	RuntimeFloorAnnotation = Prefix + "runtime-floor"
	// AppliedPodResourcesAnnotation records the pod-level spec.resources Ballast wrote
	// (policy podLevel: size): "requests cpu=300m,memory=320Mi; limits memory=640Mi".
	AppliedPodResourcesAnnotation = Prefix + "applied-pod-resources"

	// StartupBoostAnnotation records, on a pod boosted at admission, the un-boosted cpu
	// values the boost is taken back to, readyFor, and when it ended (policy
	// behaviors.startupBoost).
	StartupBoostAnnotation = Prefix + "startup-boost"

	LastResizeAnnotation       = Prefix + "last-resize"
	ResizeBlockedAnnotation    = Prefix + "resize-blocked"
	ResizeBlockedAtAnnotation  = Prefix + "resize-blocked-at"
	ResizeStateAnnotation      = Prefix + "resize-state"
	ResizeStateSinceAnnotation = Prefix + "resize-state-since"

	// ResizeGuardKey is Ballast's owner key in a node's
	// spec.podPreemptionPolicy.disableResizePreemption (the Deferred ladder's guard).
	ResizeGuardKey = Prefix + "resize-planner"
	// FieldManager is the server-side-apply field manager of Ballast's runtime writes.
	FieldManager = EventComponent

	// ProfileFinalizer purges a profile's store data before the profile goes away.
	ProfileFinalizer = Prefix + "profile-cleanup"

	// BallastConfigName is the only BallastConfig name Ballast reads.
	BallastConfigName = "ballast"
	// KillSwitchConfigMap activates the kill switch while it exists in the operator namespace.
	KillSwitchConfigMap = "ballast-kill-switch"
	// DefaultOperatorNamespace is used when neither the flag nor POD_NAMESPACE is set.
	DefaultOperatorNamespace = "ballast-system"

	WebhookName                 = "mpod.ballast.tightlinesoftware.com"
	WebhookPath                 = "/mutate-v1-pod"
	WebhookPort                 = 9443
	LeaderElectionID            = "910c37cf.tightlinesoftware.com"
	MissingSentinel             = "--missing--"
	PresentSentinel             = "--present--"
	NoPolicy                    = "nopolicy"
	EventComponent              = "ballast"
	CRDFieldManager             = "ballast-crd-installer"
	SourceTypeKubernetesMetrics = "kubernetesMetrics"
	SourceTypeKubeletSummary    = "kubeletSummary"
)

// Values of the resize-state annotation (SPEC §9).
const (
	ResizeStatePending    = "Pending"
	ResizeStateInProgress = "InProgress"
	ResizeStateDeferred   = "Deferred"
	ResizeStateInfeasible = "Infeasible"
	ResizeStateError      = "Error"
	ResizeStateCompleted  = "Completed"
)

// PolicyRefValue is how Ballast names a policy in the policy-ref annotation, in logs and in
// metric attributes: "<name>" for a ClusterResourcePolicy (namespace ""), and
// "<namespace>/<name>" for a ResourcePolicy.
func PolicyRefValue(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// AppliedAnnotation is the annotation recording a value written at admission,
// e.g. applied-cpu-request.
func AppliedAnnotation(resource, field string) string {
	return Prefix + "applied-" + resource + "-" + field
}

// ClampedAnnotation is the annotation recording the pre-clamp value of a request.
func ClampedAnnotation(resource string) string {
	return Prefix + "clamped-" + resource + "-request"
}

// ValidMode reports whether v is one of the enrollment modes.
func ValidMode(v string) bool {
	return v == ModeMeasure || v == ModeApply || v == ModeResize
}
