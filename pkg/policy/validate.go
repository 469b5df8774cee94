package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Reasons of the policy Valid condition (SPEC §3.3), listed in the order they are checked:
// the first failure found sets the reason.
const (
	ReasonValid                = ballastv1.ReasonValid
	ReasonInvalidPattern       = "InvalidPattern"
	ReasonInvalidLabelSelector = "InvalidLabelSelector"
	ReasonInvalidResource      = "InvalidResource"
	ReasonInvalidAggregation   = "InvalidAggregation"
	ReasonInvalidHeadroom      = "InvalidHeadroom"
	ReasonInvalidQuantity      = "InvalidQuantity"
	ReasonInvalidDuration      = "InvalidDuration"
	ReasonInvalidPercentage    = "InvalidPercentage"
	ReasonInvalidNumber        = "InvalidNumber"
	// ReasonInvalidBounds: a minAllowed/maxAllowed key is not a recommended resource, or
	// its value is not a quantity ≥ 0, or minAllowed exceeds maxAllowed.
	ReasonInvalidBounds = "InvalidBounds"
	// ReasonInvalidHPA: behaviors.hpa is not preserve, scale-target or ignore.
	ReasonInvalidHPA = "InvalidHPA"
	// ReasonInvalidRuntime: runtime.type or podLevel is not one of their values, or
	// runtime.margin is not a percentage in [0, 100].
	ReasonInvalidRuntime = "InvalidRuntime"
)

// MaxHeadroom is the largest headroom a valid policy may set: a multiplier above it is a
// typo or an attack on the cluster's capacity, not a safety margin.
const MaxHeadroom = 10

// Resources a policy may name, and the fields of metrics[].
const (
	ResourceCPU              = "cpu"
	ResourceMemory           = "memory"
	ResourceEphemeralStorage = "ephemeral-storage"

	FieldRequest = "request"
	FieldLimit   = "limit"
)

// resources lists the resources a policy may name, in SPEC order; aggregations the
// statistics metrics[].aggregation may name.
var (
	resources    = []string{ResourceCPU, ResourceMemory, ResourceEphemeralStorage}
	aggregations = []string{"p50", "p75", "p90", "p95", "p99", "max", "avg"}
)

// ValidationError is why a policy is invalid: the Valid condition's reason and message.
// The message names the field and the offending value, e.g.
// `metrics[2].headroom "0": must be a decimal > 0`.
type ValidationError struct {
	Reason  string
	Message string
}

func (e *ValidationError) Error() string { return e.Reason + ": " + e.Message }

func invalid(reason, format string, args ...any) *ValidationError {
	return &ValidationError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Validate checks a policy spec of kind (ballastv1.KindClusterResourcePolicy or
// KindResourcePolicy) as its author wrote it (SPEC §3.3), against floors (see Floors: a
// ResourcePolicy is held to them, a ClusterResourcePolicy only to the absolute floors). It
// returns (true, ReasonValid, "") for a valid spec, else false and the first failure's
// reason and message. Blank values are not errors: they take their resolve-time defaults.
func Validate(kind string, spec ballastv1.ResourcePolicySpec, floors Floors) (ok bool, reason, message string) {
	if _, err := parse(spec, floors.limitsFor(kind)); err != nil {
		return false, err.Reason, err.Message
	}
	return true, ReasonValid, ""
}

// parsed holds everything parse derives from a spec. Blank optional values stay zero.
type parsed struct {
	include, exclude []Pattern
	annotations      map[string]Pattern
	labelSelector    labels.Selector
	metrics          []Metric
	readiness        Readiness
	resize           Resize
	minAllowed       map[string]int64
	maxAllowed       map[string]int64
	hpa              string
	runtime          Runtime
	podLevel         string
	boost            *Boost
}

// parse validates spec and parses it against the floors l, checking reasons in SPEC §3.3
// order.
func parse(spec ballastv1.ResourcePolicySpec, l limits) (*parsed, *ValidationError) {
	p := &parsed{}
	var err *ValidationError
	sel := spec.Selector

	// InvalidPattern: every /…/ pattern must be valid RE2.
	if p.include, err = parsePatterns("selector.namespaces.include", sel.Namespaces.Include); err != nil {
		return nil, err
	}
	if p.exclude, err = parsePatterns("selector.namespaces.exclude", sel.Namespaces.Exclude); err != nil {
		return nil, err
	}
	p.annotations = make(map[string]Pattern, len(sel.Annotations))
	for _, key := range sortedKeys(sel.Annotations) {
		pat, perr := ParsePattern(sel.Annotations[key])
		if perr != nil {
			return nil, invalid(ReasonInvalidPattern, "selector.annotations[%q] %q: %v", key, sel.Annotations[key], perr)
		}
		p.annotations[key] = pat
	}

	// InvalidLabelSelector: absent means every pod; otherwise it must convert.
	p.labelSelector = labels.Everything()
	if sel.LabelSelector != nil {
		s, lerr := metav1.LabelSelectorAsSelector(sel.LabelSelector)
		if lerr != nil {
			return nil, invalid(ReasonInvalidLabelSelector, "selector.labelSelector: %v", lerr)
		}
		p.labelSelector = s
	}

	// InvalidResource.
	for i, m := range spec.Metrics {
		if !slices.Contains(resources, m.Resource) {
			return nil, invalid(ReasonInvalidResource, "metrics[%d].resource %q: must be one of %s",
				i, m.Resource, strings.Join(resources, ", "))
		}
	}

	// InvalidAggregation: field and aggregation enums, for objects stored before schema checks.
	for i, m := range spec.Metrics {
		if m.Field != FieldRequest && m.Field != FieldLimit {
			return nil, invalid(ReasonInvalidAggregation, "metrics[%d].field %q: must be request or limit", i, m.Field)
		}
		if !slices.Contains(aggregations, m.Aggregation) {
			return nil, invalid(ReasonInvalidAggregation, "metrics[%d].aggregation %q: must be one of %s",
				i, m.Aggregation, strings.Join(aggregations, ", "))
		}
	}

	// InvalidHeadroom: a decimal > 0; blank is 1.0.
	p.metrics = make([]Metric, len(spec.Metrics))
	for i, m := range spec.Metrics {
		h := m.Headroom
		if h == "" {
			h = ballastv1.DefaultHeadroom
			if spec.Runtime.Type == RuntimeJVM && m.Resource == ResourceMemory {
				// A jvm heap fills before the collector runs: more room by default.
				h = JVMMemoryHeadroom
			}
		}
		d, derr := ParseDecimal(h)
		if derr != nil || d.Sign() <= 0 {
			return nil, invalid(ReasonInvalidHeadroom, "metrics[%d].headroom %q: must be a decimal > 0", i, m.Headroom)
		}
		if d.CmpInt64(MaxHeadroom) > 0 {
			return nil, invalid(ReasonInvalidHeadroom, "metrics[%d].headroom %q: must be ≤ %d", i, m.Headroom, MaxHeadroom)
		}
		p.metrics[i] = Metric{Resource: m.Resource, Field: m.Field, Source: m.Source, Aggregation: m.Aggregation, Headroom: d}
	}

	// InvalidQuantity: cvMeanFloor values are non-negative quantities.
	if p.readiness.CVMeanFloor, err = parseFloors(spec.Readiness.CVMeanFloor); err != nil {
		return nil, err
	}

	// InvalidDuration: Go durations > 0, and not below their floors.
	p.readiness.MinDataPoints = spec.Readiness.MinDataPoints
	if p.readiness.MinTimeSpan, err = parseDuration("readiness.minTimeSpan", spec.Readiness.MinTimeSpan, l.timeSpan); err != nil {
		return nil, err
	}
	if p.resize.Interval, err = parseDuration("behaviors.resize.interval", spec.Behaviors.Resize.Interval, l.interval); err != nil {
		return nil, err
	}

	if p.resize.Cooldown, err = parseDuration("behaviors.resize.cooldown", spec.Behaviors.Resize.Cooldown, durationLimit{}); err != nil {
		return nil, err
	}
	if p.resize.Cooldown == 0 {
		p.resize.Cooldown, _ = ParsePositiveDuration(ballastv1.DefaultResizeCooldown)
	}
	if err = parseConcurrency(spec.Behaviors.Resize.MaxConcurrentResizes, &p.resize); err != nil {
		return nil, err
	}

	// InvalidPercentage: thresholds > 0 and not below their floor; maxChangePerCycle in
	// (0, 100].
	if err = parseThresholds(spec.Behaviors.Thresholds, &p.resize, l.threshold); err != nil {
		return nil, err
	}
	if v := spec.Behaviors.Resize.MaxChangePerCycle; v != "" {
		d, derr := ParsePercentage(v)
		if derr != nil || d.Sign() <= 0 || d.CmpInt64(100) > 0 {
			return nil, invalid(ReasonInvalidPercentage,
				"behaviors.resize.maxChangePerCycle %q: must be a percentage > 0 and ≤ 100", v)
		}
		p.resize.MaxChangePerCycle = d
	}

	// InvalidBounds: minAllowed/maxAllowed name recommended resources, hold quantities
	// ≥ 0, and min ≤ max.
	if p.minAllowed, err = parseAllowed("minAllowed", spec.MinAllowed); err != nil {
		return nil, err
	}
	if p.maxAllowed, err = parseAllowed("maxAllowed", spec.MaxAllowed); err != nil {
		return nil, err
	}
	for _, res := range sortedKeys(p.minAllowed) {
		if mx, ok := p.maxAllowed[res]; ok && p.minAllowed[res] > mx {
			return nil, invalid(ReasonInvalidBounds, "minAllowed[%q] %q: must be ≤ maxAllowed[%q] %q",
				res, spec.MinAllowed[res], res, spec.MaxAllowed[res])
		}
	}

	// InvalidHPA: behaviors.hpa is one of its enum (objects stored before schema checks);
	// blank is the default, preserve.
	switch spec.Behaviors.HPA {
	case "":
		p.hpa = ballastv1.DefaultHPA
	case ballastv1.HPAPreserve, ballastv1.HPAScaleTarget, ballastv1.HPAIgnore:
		p.hpa = spec.Behaviors.HPA
	default:
		return nil, invalid(ReasonInvalidHPA, "behaviors.hpa %q: must be one of %s, %s, %s",
			spec.Behaviors.HPA, ballastv1.HPAPreserve, ballastv1.HPAScaleTarget, ballastv1.HPAIgnore)
	}

	// InvalidRuntime: runtime.type and podLevel from their lists, margin in [0, 100].
	switch t := spec.Runtime.Type; t {
	case "", RuntimeGeneric, RuntimeJVM, RuntimeGo, RuntimeNode, RuntimePython, RuntimeAuto:
		p.runtime.Type = t
		if t == "" {
			p.runtime.Type = RuntimeGeneric
		}
	default:
		return nil, invalid(ReasonInvalidRuntime, "runtime.type %q: must be one of generic, jvm, go, node, python, auto", t)
	}
	margin := spec.Runtime.Margin
	if margin == "" {
		margin = "5%"
	}
	d, derr := ParsePercentage(margin)
	if derr != nil || d.Sign() < 0 || d.CmpInt64(100) > 0 {
		return nil, invalid(ReasonInvalidRuntime, "runtime.margin %q: must be a percentage in [0, 100]", spec.Runtime.Margin)
	}
	p.runtime.Margin = d
	switch spec.PodLevel {
	case "", PodLevelKeep:
		p.podLevel = PodLevelKeep
	case PodLevelSize:
		p.podLevel = PodLevelSize
	default:
		return nil, invalid(ReasonInvalidRuntime, "podLevel %q: must be keep or size", spec.PodLevel)
	}

	// InvalidNumber: maxCV is a decimal ≥ 0.
	if v := spec.Readiness.MaxCV; v != "" {
		d, derr := ParseDecimal(v)
		if derr != nil || d.Sign() < 0 {
			return nil, invalid(ReasonInvalidNumber, "readiness.maxCV %q: must be a decimal ≥ 0", v)
		}
		p.readiness.MaxCV = d
	}

	// InvalidBoost: behaviors.startupBoost (boost.go).
	if p.boost, err = parseBoost(spec.Behaviors.StartupBoost); err != nil {
		return nil, err
	}
	return p, nil
}

// parseFloors parses readiness.cvMeanFloor into whole units (millicores for cpu, bytes
// otherwise). A blank entry is not an error (SPEC §3.3: blank values take their
// resolve-time defaults) and, since an entry has no default of its own, it is a missing
// entry: no floor for that resource (§4.3). Entries are checked in sorted order so the
// first failure reported is the same on every call.
func parseFloors(floors map[string]string) (map[string]int64, *ValidationError) {
	if floors == nil {
		return nil, nil
	}
	out := make(map[string]int64, len(floors))
	for _, res := range sortedKeys(floors) {
		v := floors[res]
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			return nil, invalid(ReasonInvalidQuantity, "readiness.cvMeanFloor[%q] %q: must be a quantity ≥ 0", res, v)
		}
		if res == ResourceCPU {
			out[res] = q.MilliValue()
		} else {
			out[res] = q.Value()
		}
	}
	return out, nil
}

// parseAllowed parses minAllowed or maxAllowed into whole units (millicores for cpu, bytes
// otherwise); a blank entry is no bound.
func parseAllowed(field string, m map[string]string) (map[string]int64, *ValidationError) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]int64, len(m))
	for _, res := range sortedKeys(m) {
		v := m[res]
		if !slices.Contains(resources, res) {
			return nil, invalid(ReasonInvalidBounds, "%s[%q]: must be one of %s", field, res, strings.Join(resources, ", "))
		}
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			return nil, invalid(ReasonInvalidBounds, "%s[%q] %q: must be a quantity ≥ 0", field, res, v)
		}
		if res == ResourceCPU {
			out[res] = q.MilliValue()
		} else {
			out[res] = q.Value()
		}
	}
	return out, nil
}

// parseThresholds checks every written threshold (> 0, and not below floor) and records it
// for the chain of Resize.Threshold.
func parseThresholds(th ballastv1.Thresholds, r *Resize, floor percentLimit) *ValidationError {
	var err *ValidationError
	if r.defaultThreshold, err = parseThreshold("behaviors.thresholds.default", th.Default, floor); err != nil {
		return err
	}
	if r.resizeDefault, err = parseThreshold("behaviors.thresholds.resize.default", th.Resize.Default, floor); err != nil {
		return err
	}
	for _, res := range sortedKeys(th.Resize.ResourceThresholds) {
		path := fmt.Sprintf("behaviors.thresholds.resize.resourceThresholds[%q]", res)
		var ft fieldThreshold
		if ft.request, err = parseThreshold(path+".request", th.Resize.ResourceThresholds[res].Request, floor); err != nil {
			return err
		}
		if ft.limit, err = parseThreshold(path+".limit", th.Resize.ResourceThresholds[res].Limit, floor); err != nil {
			return err
		}
		if r.perField == nil {
			r.perField = map[string]fieldThreshold{}
		}
		r.perField[res] = ft
	}
	return nil
}

func parsePatterns(path string, raw []string) ([]Pattern, *ValidationError) {
	out := make([]Pattern, len(raw))
	for i, s := range raw {
		p, err := ParsePattern(s)
		if err != nil {
			return nil, invalid(ReasonInvalidPattern, "%s[%d] %q: %v", path, i, s, err)
		}
		out[i] = p
	}
	return out, nil
}

func parseDuration(path, v string, floor durationLimit) (time.Duration, *ValidationError) {
	if v == "" {
		return 0, nil
	}
	d, err := ParsePositiveDuration(v)
	if err != nil {
		return 0, invalid(ReasonInvalidDuration, "%s %q: must be a Go duration > 0", path, v)
	}
	if verr := floor.check(path, v, d); verr != nil {
		return 0, verr
	}
	return d, nil
}

// parseThreshold parses one threshold; blank is the zero Decimal (not written).
func parseThreshold(path, v string, floor percentLimit) (Decimal, *ValidationError) {
	if v == "" {
		return Decimal{}, nil
	}
	d, err := ParsePercentage(v)
	if err != nil || d.Sign() <= 0 {
		return Decimal{}, invalid(ReasonInvalidPercentage, "%s %q: must be a percentage > 0", path, v)
	}
	if verr := floor.check(path, v, d); verr != nil {
		return Decimal{}, verr
	}
	return d, nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
