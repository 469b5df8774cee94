package recommend

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
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

// NoSamplesYet is the source error of a series that has no retained sample yet.
const NoSamplesYet = "no samples from the source yet"

// Gap measures one series against every readiness gate of SPEC §4.3 (CheckReady stops at
// the first failing one): each field is "have/need", and Missing lists, in one line, the
// gates still failing. A read error or a missing series is a source error.
func Gap(res string, s Stats, has bool, readErr error, p policy.Readiness) v1.ResourceReadiness {
	g := v1.ResourceReadiness{Resource: res}
	switch {
	case readErr != nil:
		g.SourceError = readErr.Error()
		g.Missing = "source error: " + g.SourceError
		return g
	case !has:
		g.SourceError = NoSamplesYet
		g.Missing = fmt.Sprintf("samples 0/%d (no samples from the source yet)", p.MinDataPoints)
		return g
	}
	var missing []string
	g.Samples = fmt.Sprintf("%d/%d", s.Samples, p.MinDataPoints)
	if s.Samples < p.MinDataPoints {
		missing = append(missing, "samples "+g.Samples)
	}
	g.TimeSpan = FormatTimeSpan(s.TimeSpan) + "/" + FormatTimeSpan(p.MinTimeSpan)
	if s.TimeSpan < p.MinTimeSpan {
		missing = append(missing, "span "+g.TimeSpan)
	}
	maxCV := p.MaxCV.Float64()
	if floor, ok := p.CVMeanFloor[res]; ok && floor > 0 && s.Mean < float64(floor) {
		g.CV = "waived: mean " + FormatStat(res, s.Mean) + " below floor " + FormatStat(res, float64(floor))
	} else {
		g.CV = FormatCV(s.CV) + "/" + FormatCV(maxCV)
		if !(s.CV <= maxCV) {
			missing = append(missing, "cv "+g.CV)
		}
	}
	g.Ready = len(missing) == 0
	g.Missing = strings.Join(missing, ", ")
	return g
}

// sufficientCondition says in one line whether the profile is Sufficient and, if not, what
// each (container, resource) still lacks against its readiness targets.
func sufficientCondition(in Input, res Result, p policy.Readiness) metav1.Condition {
	cond := metav1.Condition{
		Type:               v1.ConditionSufficient,
		Status:             metav1.ConditionTrue,
		ObservedGeneration: in.Generation,
		LastTransitionTime: metav1.NewTime(in.Now),
		Reason:             v1.ReasonReadinessMet,
	}
	if res.MeetsThreshold {
		cond.Message = fmt.Sprintf("every container meets readiness (samples ≥ %d, span ≥ %s, cv ≤ %s)",
			p.MinDataPoints, FormatTimeSpan(p.MinTimeSpan), FormatCV(p.MaxCV.Float64()))
		return cond
	}
	cond.Status, cond.Reason = metav1.ConditionFalse, v1.ReasonAccruing
	cond.Message = PendingSummary(res.Pending)
	if cond.Message == "" {
		cond.Message = "no container has retained samples yet"
	}
	return cond
}

// PendingSummary renders what is missing in one line, grouped by container:
// "app: cpu samples 120/250, span 1m0s/24h0m0s; memory samples 120/250".
func PendingSummary(pending []Pending) string {
	var b strings.Builder
	last := ""
	for i, p := range pending {
		switch {
		case i == 0:
			b.WriteString(p.Container + ": ")
		case p.Container != last:
			b.WriteString("; " + p.Container + ": ")
		default:
			b.WriteString("; ")
		}
		last = p.Container
		b.WriteString(p.Resource + " " + p.Message)
	}
	return b.String()
}
