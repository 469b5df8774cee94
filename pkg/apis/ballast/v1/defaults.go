package v1

import "time"

// Resolve-time defaults of SPEC §2.3. They are applied to in-memory copies whenever a
// policy is resolved or loaded and are never written back to the API server.
const (
	DefaultMinDataPoints     int64 = 500
	DefaultMinTimeSpan             = "24h"
	DefaultMaxCV                   = "1.5"
	DefaultThreshold               = "10%"
	DefaultMaxChangePerCycle       = "50%"
	DefaultResizeInterval          = "15m"
	// DefaultResizeCooldown is behaviors.resize.cooldown when blank (applied when the policy
	// is compiled).
	DefaultResizeCooldown = "1h"
	// DefaultMaxConcurrentPerWorkload is behaviors.resize.maxConcurrentResizes.perWorkload
	// when blank.
	DefaultMaxConcurrentPerWorkload = "10%"
	DefaultStartupBoostReadyFor     = "60s"

	// Schema defaults of BallastConfig spec.policyFloors: the smallest values a ResourcePolicy
	// may set. A blank or unparseable floor counts as its default.
	DefaultFloorResizeInterval = "1m"
	DefaultFloorMinTimeSpan    = "1h"
	DefaultFloorThreshold      = "1%"

	// DefaultHeadroom is the compute-time default of metrics[].headroom.
	DefaultHeadroom = "1.0"

	// DefaultPollInterval is the sampling interval of a profile whose policy names no usable source.
	DefaultPollInterval = 60 * time.Second
	// DefaultRetentionWindow applies when BallastConfig's retentionWindow is unparseable or ≤ 0.
	DefaultRetentionWindow = 168 * time.Hour
)

// DefaultCVMeanFloor returns the floors used when a policy's readiness.cvMeanFloor is absent.
func DefaultCVMeanFloor() map[string]string {
	return map[string]string{"cpu": "25m", "memory": "25Mi", "ephemeral-storage": "2Mi"}
}

// DefaultPolicySpec returns a deep copy of spec with every resolve-time default applied.
// The input is not modified. cvMeanFloor is defaulted only when the map is absent (nil):
// an explicit empty map disables every floor.
func DefaultPolicySpec(spec ResourcePolicySpec) ResourcePolicySpec {
	out := *spec.DeepCopy()
	r := &out.Readiness
	if r.MinDataPoints <= 0 {
		r.MinDataPoints = DefaultMinDataPoints
	}
	if r.MinTimeSpan == "" {
		r.MinTimeSpan = DefaultMinTimeSpan
	}
	if r.MaxCV == "" {
		r.MaxCV = DefaultMaxCV
	}
	if r.CVMeanFloor == nil {
		r.CVMeanFloor = DefaultCVMeanFloor()
	}
	b := &out.Behaviors
	if b.Thresholds.Default == "" {
		b.Thresholds.Default = DefaultThreshold
	}
	if b.HPA == "" {
		b.HPA = DefaultHPA
	}
	if b.Resize.MaxChangePerCycle == "" {
		b.Resize.MaxChangePerCycle = DefaultMaxChangePerCycle
	}
	if b.Resize.Interval == "" {
		b.Resize.Interval = DefaultResizeInterval
	}
	if b.StartupBoost != nil && b.StartupBoost.ReadyFor == "" {
		b.StartupBoost.ReadyFor = DefaultStartupBoostReadyFor
	}
	return out
}

// RetentionWindow returns the effective retention window of a BallastConfig spec and
// whether the written value was usable (false means the 168h fallback applies and the
// caller should warn once per change).
func RetentionWindow(spec BallastConfigSpec) (time.Duration, bool) {
	d, err := time.ParseDuration(spec.RetentionWindow)
	if err != nil || d <= 0 {
		return DefaultRetentionWindow, spec.RetentionWindow == ""
	}
	return d, true
}

// OrphanTTL returns the orphan TTL of a BallastConfig spec; ok is false when the value does
// not parse, in which case no TTL deletion happens.
func OrphanTTL(spec BallastConfigSpec) (ttl time.Duration, ok bool) {
	d, err := time.ParseDuration(spec.OrphanTTL)
	if err != nil {
		return 0, false
	}
	return d, true
}
