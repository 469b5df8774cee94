package sizing

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Field is one side of a container's resource requirements.
type Field string

const (
	// Request targets resources.requests.
	Request Field = "request"
	// Limit targets resources.limits.
	Limit Field = "limit"
)

// Skip reasons. They become event reasons, log keys and metric attributes
// (ballast.apply.skipped{reason}, ballast.resize.skipped{reason}).
const (
	// ReasonNoChange: admission computed nothing to write (SPEC §7.2 step 8).
	ReasonNoChange = "no_change"
	// ReasonQoSPinned: writing the changes would change the pod's QoS class (§7.4, §8.2 step 5).
	ReasonQoSPinned = "qos_pinned"
	// ReasonResizePending: a previous resize is Pending, InProgress or Deferred (§8.2 step 1).
	ReasonResizePending = "resize_pending"
	// ReasonBlocked: a failed resize is younger than one interval (§8.2 step 2).
	ReasonBlocked = "blocked"
	// ReasonCooldown: the last resize is younger than one interval (§8.2 step 3).
	ReasonCooldown = "cooldown"
	// ReasonNotResizable: only a resource that cannot be resized in place drifted (§8.2 step 4).
	ReasonNotResizable = "not_resizable"
	// ReasonClampedAtLimit: the only gap left is a request held at its clamp target (§8.2 step 4).
	ReasonClampedAtLimit = "clamped_at_limit"
	// ReasonNoDrift: nothing drifted beyond its threshold (§8.2 step 4).
	ReasonNoDrift = "no_drift"
	// ReasonDryRun: a patch was computed but dry-run suppresses it (§8.2 step 6).
	ReasonDryRun = "dry_run"
)

// Target is one (resource, field) pair.
type Target struct {
	Resource corev1.ResourceName
	Field    Field
}

// Managed is the set of (resource, field) pairs a policy's metrics manage. Resources and
// fields not in the set are never touched. A nil set manages nothing.
type Managed map[Target]bool

// Has reports whether the policy manages field of res.
func (m Managed) Has(res corev1.ResourceName, f Field) bool {
	return m[Target{Resource: res, Field: f}]
}

// Units is an amount of one resource in its whole unit: millicores for cpu, bytes for
// memory and ephemeral-storage. The calculator works in Units only; values become
// resource.Quantity at the edges (parsing a profile's status, rendering a patch).
type Units int64

// UnitsOf converts q to Units of res, rounding a fraction of a unit up (the Quantity's
// MilliValue for cpu, Value otherwise).
func UnitsOf(res corev1.ResourceName, q resource.Quantity) Units {
	if res == corev1.ResourceCPU {
		return Units(q.MilliValue())
	}
	return Units(q.Value())
}

// Quantity renders u as a Quantity of res: cpu as a DecimalSI milli-quantity ("199m",
// "2"), anything else as BinarySI bytes ("128Mi", "134217727").
func (u Units) Quantity(res corev1.ResourceName) resource.Quantity {
	if res == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(int64(u), resource.DecimalSI)
	}
	return *resource.NewQuantity(int64(u), resource.BinarySI)
}

// String renders u the way Quantity(res) does, for logs and messages.
func (u Units) String(res corev1.ResourceName) string {
	q := u.Quantity(res)
	return q.String()
}

// ResourceRecommendation is the recommended request and limit of one resource; HasRequest
// and HasLimit say which fields carry a recommendation.
type ResourceRecommendation struct {
	Request, Limit       Units
	HasRequest, HasLimit bool
}

// Recommendations maps container name → resource → recommendation.
type Recommendations map[string]map[corev1.ResourceName]ResourceRecommendation

// ContainerChanges are the values to write into one long-running container: the patch
// edge of a Plan, in Quantity form. Requests and Limits hold only the written values (nil
// when none).
type ContainerChanges struct {
	// Name is the container name.
	Name string
	// Sidecar is true for a native sidecar, which lives in spec.initContainers.
	Sidecar bool
	// Index is the container's position in spec.containers or spec.initContainers.
	Index    int
	Requests corev1.ResourceList
	Limits   corev1.ResourceList
}

func (c ContainerChanges) empty() bool { return len(c.Requests) == 0 && len(c.Limits) == 0 }

// Clamp records a request held at its bound (SPEC §7.5). Recommended is the pre-clamp
// value: the recommendation, or the author's request when only the limit is managed.
// Limit is the bound in effect; Written is what the request is set to (the bound, or
// one unit below it after a step-down).
type Clamp struct {
	Container   string
	Resource    corev1.ResourceName
	Recommended Units
	Limit       Units
	Written     Units
}

// recommendedResources are the resources Ballast recommends, in processing order.
var recommendedResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
}

// resizable reports whether res can be changed in place (and takes part in QoS).
func resizable(res corev1.ResourceName) bool {
	return res == corev1.ResourceCPU || res == corev1.ResourceMemory
}
