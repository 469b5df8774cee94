package recommend

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// ReadinessParams are a policy's readiness settings, parsed and with resolve-time defaults
// applied.
type ReadinessParams struct {
	MinDataPoints int64
	MinTimeSpan   time.Duration
	MaxCV         float64
	// CVMeanFloor maps a resource to its floor, in millicores for cpu and bytes otherwise.
	// A missing entry means no floor; an entry of 0 means the CV gate always applies.
	CVMeanFloor map[string]float64
}

// ParseReadiness applies the resolve-time defaults of SPEC §2.3 (v1.DefaultPolicySpec: an
// absent cvMeanFloor map gets the built-in floors, an explicit empty one disables them) and
// parses the result. Errors are *FieldError with paths under "readiness.".
func ParseReadiness(r v1.Readiness) (ReadinessParams, error) {
	r = v1.DefaultPolicySpec(v1.ResourcePolicySpec{Readiness: r}).Readiness
	p := ReadinessParams{MinDataPoints: r.MinDataPoints, CVMeanFloor: map[string]float64{}}

	d, err := time.ParseDuration(r.MinTimeSpan)
	if err != nil || d <= 0 {
		return ReadinessParams{}, &FieldError{Reason: ReasonInvalidDuration, Field: "readiness.minTimeSpan",
			Value: r.MinTimeSpan, Detail: "must be a Go duration > 0"}
	}
	p.MinTimeSpan = d

	cv, err := ParseDecimal(r.MaxCV)
	if err != nil || cv.Sign() < 0 {
		return ReadinessParams{}, &FieldError{Reason: ReasonInvalidNumber, Field: "readiness.maxCV",
			Value: r.MaxCV, Detail: "must be a decimal >= 0"}
	}
	p.MaxCV, _ = cv.Float64()

	// Sorted so the first bad entry reported is the same on every call.
	for _, res := range slices.Sorted(maps.Keys(r.CVMeanFloor)) {
		raw := r.CVMeanFloor[res]
		q, err := resource.ParseQuantity(raw)
		if err != nil || q.Sign() < 0 {
			return ReadinessParams{}, &FieldError{Reason: ReasonInvalidQuantity,
				Field: "readiness.cvMeanFloor[" + res + "]", Value: raw, Detail: "must be a non-negative quantity"}
		}
		if res == ResourceCPU {
			p.CVMeanFloor[res] = float64(q.MilliValue())
		} else {
			p.CVMeanFloor[res] = float64(q.Value())
		}
	}
	return p, nil
}

// Reasons a (container, resource) is not ready.
const (
	NotReadyReadError         = "ReadError"
	NotReadyNoSeries          = "NoSeries"
	NotReadyTooFewSamples     = "TooFewSamples"
	NotReadyTimeSpanTooShort  = "TimeSpanTooShort"
	NotReadyVariationTooLarge = "VariationTooLarge"
	NotReadyInvalidStatistic  = "InvalidStatistic"
)

// CheckReady applies the readiness gates of SPEC §4.3 to the statistics of one series, in
// order. It returns ready, or the first failing gate's reason and a message for logs.
func CheckReady(res string, s Stats, p ReadinessParams) (reason, message string, ready bool) {
	// Enough samples.
	if s.Samples < p.MinDataPoints {
		return NotReadyTooFewSamples, fmt.Sprintf("%d samples, need %d", s.Samples, p.MinDataPoints), false
	}
	// Long enough history.
	if s.TimeSpan < p.MinTimeSpan {
		return NotReadyTimeSpanTooShort, fmt.Sprintf("time span %s, need %s",
			FormatTimeSpan(s.TimeSpan), p.MinTimeSpan), false
	}
	// A positive floor above the mean waives the CV gate: the series is too small for its
	// variation to matter.
	if floor, ok := p.CVMeanFloor[res]; ok && floor > 0 && s.Mean < floor {
		return "", "", true
	}
	// Stable enough (written so a NaN cv fails).
	if !(s.CV <= p.MaxCV) {
		return NotReadyVariationTooLarge, fmt.Sprintf("cv %s, max %g", FormatCV(s.CV), p.MaxCV), false
	}
	return "", "", true
}
