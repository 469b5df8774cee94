package policy

import (
	"fmt"
	"slices"
	"strings"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// ReasonUnknownMetricsSource: a metric names a MetricsSource that does not exist or whose
// type Ballast does not know. Such a policy is invalid: it would move every pod it matches
// to new, empty profiles that can never get samples (SPEC §3.3).
const ReasonUnknownMetricsSource = "UnknownMetricsSource"

// UnknownSources returns, sorted and once each, the sources metrics name that are not in
// known (the names of the MetricsSources of a known type). Blank sources are skipped.
func UnknownSources(metrics []ballastv1.MetricSpec, known map[string]bool) []string {
	var out []string
	for _, m := range metrics {
		if m.Source != "" && !known[m.Source] && !slices.Contains(out, m.Source) {
			out = append(out, m.Source)
		}
	}
	slices.Sort(out)
	return out
}

// ValidateWithSources is Validate, then the check that every metric names a known
// MetricsSource; known holds the names of the MetricsSources of a known type.
func ValidateWithSources(kind string, spec ballastv1.ResourcePolicySpec, known map[string]bool, floors Floors) (ok bool, reason, message string) {
	if ok, reason, message = Validate(kind, spec, floors); !ok {
		return ok, reason, message
	}
	if unknown := UnknownSources(spec.Metrics, known); len(unknown) > 0 {
		return false, ReasonUnknownMetricsSource, fmt.Sprintf("metrics name MetricsSources that do not exist or have an unknown type: %s",
			strings.Join(unknown, ", "))
	}
	return true, ReasonValid, ""
}

// KnownSources is the set of source names that resolve: those whose type is known.
func KnownSources(sources map[string]string) map[string]bool {
	known := make(map[string]bool, len(sources))
	for name, typ := range sources {
		if KnownSourceType(typ) {
			known[name] = true
		}
	}
	return known
}
