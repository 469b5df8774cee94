package policy

import (
	"fmt"
	"strings"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Floors are the smallest values a namespaced ResourcePolicy may set: the cluster admin's
// BallastConfig spec.policyFloors, parsed (ParseFloors). Tenants write ResourcePolicies, so
// a value below a floor makes the policy invalid instead of letting one namespace spin the
// leader (a 1ns resize interval) or resize on noise (a 0.001% threshold). A
// ClusterResourcePolicy is written by the admin and held only to the absolute floors.
//
// A zero field is no cluster floor: only the absolute floor applies. The zero Floors is
// therefore "absolute floors only", which is what a ClusterResourcePolicy always gets.
type Floors struct {
	ResizeInterval time.Duration
	MinTimeSpan    time.Duration
	// Threshold is in percent (1 for "1%").
	Threshold Decimal
}

// Absolute floors hold every policy, ClusterResourcePolicies included: below them a value
// is a typo or a loop, never a preset (the fast test and demo presets use 5s–30s).
const (
	AbsoluteMinResizeInterval = time.Second
	AbsoluteMinTimeSpan       = time.Second
)

// DefaultFloors are the schema defaults of spec.policyFloors, and the floors in force while
// no BallastConfig exists.
var DefaultFloors = mustFloors(ballastv1.DefaultFloorResizeInterval, ballastv1.DefaultFloorMinTimeSpan,
	ballastv1.DefaultFloorThreshold)

func mustFloors(interval, span, threshold string) Floors {
	f, problems := ParseFloors(ballastv1.PolicyFloors{MinResizeInterval: interval, MinTimeSpan: span, MinThreshold: threshold})
	if len(problems) > 0 {
		panic("policy: default floors do not parse: " + strings.Join(problems, "; "))
	}
	return f
}

// ParseFloors parses spec.policyFloors. A blank field counts as its default (the schema
// fills it; Go callers may not); a field that does not parse or is negative also counts as
// its default and is reported in problems, one message per field, for the caller to log
// once per change. "0" is a valid floor: no cluster floor, only the absolute one.
func ParseFloors(pf ballastv1.PolicyFloors) (Floors, []string) {
	var f Floors
	var problems []string
	dur := func(field, v, def string) time.Duration {
		if v == "" {
			v = def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			problems = append(problems, fmt.Sprintf("spec.policyFloors.%s %q: must be a Go duration ≥ 0; using %s", field, v, def))
			d, _ = time.ParseDuration(def)
		}
		return d
	}
	f.ResizeInterval = dur("minResizeInterval", pf.MinResizeInterval, ballastv1.DefaultFloorResizeInterval)
	f.MinTimeSpan = dur("minTimeSpan", pf.MinTimeSpan, ballastv1.DefaultFloorMinTimeSpan)
	v := pf.MinThreshold
	if v == "" {
		v = ballastv1.DefaultFloorThreshold
	}
	d, err := ParsePercentage(v)
	if err != nil || d.Sign() < 0 {
		problems = append(problems, fmt.Sprintf("spec.policyFloors.minThreshold %q: must be a percentage ≥ 0; using %s",
			v, ballastv1.DefaultFloorThreshold))
		d, _ = ParsePercentage(ballastv1.DefaultFloorThreshold)
	}
	f.Threshold = d
	return f, problems
}

// FloorsOf returns the floors of a BallastConfig spec, DefaultFloors without one, and the
// problems ParseFloors found.
func FloorsOf(cfg *ballastv1.BallastConfigSpec) (Floors, []string) {
	if cfg == nil {
		return DefaultFloors, nil
	}
	return ParseFloors(cfg.PolicyFloors)
}

// limits are the floors in force for one policy, with where each comes from for messages.
type limits struct {
	interval, timeSpan durationLimit
	threshold          percentLimit
}

// durationLimit is one duration floor; field is the spec.policyFloors field it comes from,
// "" for an absolute floor.
type durationLimit struct {
	min   time.Duration
	field string
}

type percentLimit struct {
	min   Decimal
	field string
}

// limitsFor returns the floors in force for a policy of kind: the absolute floors for a
// ClusterResourcePolicy, for a ResourcePolicy the larger of f and the absolute floors.
func (f Floors) limitsFor(kind string) limits {
	l := limits{interval: durationLimit{min: AbsoluteMinResizeInterval}, timeSpan: durationLimit{min: AbsoluteMinTimeSpan}}
	if kind != ballastv1.KindResourcePolicy {
		return l
	}
	if f.ResizeInterval > l.interval.min {
		l.interval = durationLimit{min: f.ResizeInterval, field: "minResizeInterval"}
	}
	if f.MinTimeSpan > l.timeSpan.min {
		l.timeSpan = durationLimit{min: f.MinTimeSpan, field: "minTimeSpan"}
	}
	if f.Threshold.Sign() > 0 {
		l.threshold = percentLimit{min: f.Threshold, field: "minThreshold"}
	}
	return l
}

// raise lifts the resolve-time defaults of defaulted that spec left blank to the floors,
// so a blank value is never below a floor the admin set above its default (a 2h
// minResizeInterval makes a blank interval 2h, not 15m). Written values are not touched:
// below a floor they make the policy invalid.
func (l limits) raise(defaulted, spec ballastv1.ResourcePolicySpec) ballastv1.ResourcePolicySpec {
	if spec.Behaviors.Resize.Interval == "" && l.interval.field != "" {
		if d, err := time.ParseDuration(defaulted.Behaviors.Resize.Interval); err == nil && d < l.interval.min {
			defaulted.Behaviors.Resize.Interval = ShortDuration(l.interval.min)
		}
	}
	if spec.Readiness.MinTimeSpan == "" && l.timeSpan.field != "" {
		if d, err := time.ParseDuration(defaulted.Readiness.MinTimeSpan); err == nil && d < l.timeSpan.min {
			defaulted.Readiness.MinTimeSpan = ShortDuration(l.timeSpan.min)
		}
	}
	if spec.Behaviors.Thresholds.Default == "" && l.threshold.min.Sign() > 0 {
		if d, err := ParsePercentage(defaulted.Behaviors.Thresholds.Default); err == nil && d.Cmp(l.threshold.min) < 0 {
			defaulted.Behaviors.Thresholds.Default = l.threshold.min.String() + "%"
		}
	}
	return defaulted
}

// check reports a written duration d of path below the floor.
func (l durationLimit) check(path, written string, d time.Duration) *ValidationError {
	if written == "" || d >= l.min {
		return nil
	}
	return invalid(ReasonInvalidDuration, "%s %q: %s", path, written, below(ShortDuration(l.min), l.field))
}

// check reports a written threshold d of path below the floor.
func (l percentLimit) check(path, written string, d Decimal) *ValidationError {
	if written == "" || l.min.Sign() <= 0 || d.Cmp(l.min) >= 0 {
		return nil
	}
	return invalid(ReasonInvalidPercentage, "%s %q: %s", path, written, below(l.min.String()+"%", l.field))
}

func below(floor, field string) string {
	if field == "" {
		return "below the absolute floor " + floor
	}
	return "below the cluster floor " + floor + " (BallastConfig spec.policyFloors." + field + ")"
}

// ShortDuration renders d without zero trailing units: 1m, 1h, 1h30m, 1s, 500ms.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Equal reports whether f and o are the same floors.
func (f Floors) Equal(o Floors) bool {
	return f.ResizeInterval == o.ResizeInterval && f.MinTimeSpan == o.MinTimeSpan && f.Threshold.Cmp(o.Threshold) == 0
}
