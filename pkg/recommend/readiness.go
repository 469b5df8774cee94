package recommend

import (
	"fmt"

	"github.com/ballastk8s/ballast/pkg/policy"
)

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
// p is the compiled policy's readiness (policy.Readiness: floors in millicores for cpu,
// bytes otherwise).
func CheckReady(res string, s Stats, p policy.Readiness) (reason, message string, ready bool) {
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
	if floor, ok := p.CVMeanFloor[res]; ok && floor > 0 && s.Mean < float64(floor) {
		return "", "", true
	}
	// Stable enough (written so a NaN cv fails).
	if maxCV := p.MaxCV.Float64(); !(s.CV <= maxCV) {
		return NotReadyVariationTooLarge, fmt.Sprintf("cv %s, max %g", FormatCV(s.CV), maxCV), false
	}
	return "", "", true
}
