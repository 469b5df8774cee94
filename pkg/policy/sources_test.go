package policy

import (
	"testing"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestValidateWithSources(t *testing.T) {
	known := KnownSources(map[string]string{"kubernetes-metrics": ballastv1.SourceTypeKubernetesMetrics, "odd": "no-such-type"})
	spec := func(sources ...string) ballastv1.ResourcePolicySpec {
		var s ballastv1.ResourcePolicySpec
		for _, src := range sources {
			s.Metrics = append(s.Metrics, ballastv1.MetricSpec{Resource: "cpu", Field: "request", Source: src, Aggregation: "avg"})
		}
		return s
	}
	if ok, reason, msg := ValidateWithSources(ballastv1.KindClusterResourcePolicy, spec("kubernetes-metrics"), known, Floors{}); !ok {
		t.Errorf("known source: %s %s", reason, msg)
	}
	ok, reason, msg := ValidateWithSources(ballastv1.KindClusterResourcePolicy, spec("does-not-exist", "kubernetes-metrics", "odd", "does-not-exist"), known, Floors{})
	if ok || reason != ReasonUnknownMetricsSource ||
		msg != "metrics name MetricsSources that do not exist or have an unknown type: does-not-exist, odd" {
		t.Errorf("unknown sources: %v %s %q", ok, reason, msg)
	}
	bad := spec("does-not-exist")
	bad.Metrics[0].Aggregation = "p98"
	if _, reason, _ := ValidateWithSources(ballastv1.KindClusterResourcePolicy, bad, known, Floors{}); reason != ReasonInvalidAggregation {
		t.Errorf("a spec error is reported before unknown sources; got %s", reason)
	}
}
