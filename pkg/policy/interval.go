package policy

import (
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Source is what SamplingInterval needs of a MetricsSource: spec.type and
// spec.config.pollInterval.
type Source struct {
	Type         string
	PollInterval string
}

// SamplingInterval is a profile's sampling interval (SPEC §4.1): the smallest pollInterval
// among the sources named by metrics that exist in sources (keyed by MetricsSource name),
// have a known type and parse to > 0; otherwise ballastv1.DefaultPollInterval (60s), which
// is also the interval of a profile without policy (nil metrics).
func SamplingInterval(metrics []ballastv1.MetricSpec, sources map[string]Source) time.Duration {
	var best time.Duration
	for _, m := range metrics {
		src, ok := sources[m.Source]
		if !ok || !KnownSourceType(src.Type) {
			continue
		}
		d, err := ParsePositiveDuration(src.PollInterval)
		if err != nil {
			continue
		}
		if best == 0 || d < best {
			best = d
		}
	}
	if best == 0 {
		return ballastv1.DefaultPollInterval
	}
	return best
}

// KnownSourceType reports whether t is a MetricsSource type Ballast understands.
func KnownSourceType(t string) bool {
	return t == ballastv1.SourceTypeKubernetesMetrics || t == ballastv1.SourceTypeKubeletSummary
}
