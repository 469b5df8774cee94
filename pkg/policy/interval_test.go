package policy

import (
	"testing"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestSamplingInterval(t *testing.T) {
	sources := map[string]Source{
		"kubernetes-metrics": {Type: ballastv1.SourceTypeKubernetesMetrics, PollInterval: "10s"},
		"kubelet-summary":    {Type: ballastv1.SourceTypeKubeletSummary, PollInterval: "30s"},
		"fast-unknown":       {Type: "prometheus", PollInterval: "1s"},
		"broken":             {Type: ballastv1.SourceTypeKubeletSummary, PollInterval: "soon"},
		"zero":               {Type: ballastv1.SourceTypeKubernetesMetrics, PollInterval: "0s"},
		"negative":           {Type: ballastv1.SourceTypeKubernetesMetrics, PollInterval: "-5s"},
	}
	metrics := func(names ...string) []ballastv1.MetricSpec {
		var out []ballastv1.MetricSpec
		for _, n := range names {
			out = append(out, ballastv1.MetricSpec{Resource: "cpu", Field: "request", Source: n, Aggregation: "avg"})
		}
		return out
	}
	cases := map[string]struct {
		metrics []ballastv1.MetricSpec
		want    time.Duration
	}{
		"the smallest interval of the named sources": {metrics("kubelet-summary", "kubernetes-metrics"), 10 * time.Second},
		"a single source":             {metrics("kubelet-summary"), 30 * time.Second},
		"an unknown type is ignored":  {metrics("fast-unknown", "kubelet-summary"), 30 * time.Second},
		"a missing source is ignored": {metrics("deleted", "kubelet-summary"), 30 * time.Second},
		"unparseable and non-positive intervals are ignored": {
			metrics("broken", "zero", "negative", "kubelet-summary"), 30 * time.Second,
		},
		"no usable source falls back to 60s": {metrics("broken", "fast-unknown", "deleted"), 60 * time.Second},
		"no policy is 60s":                   {nil, 60 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SamplingInterval(tc.metrics, sources); got != tc.want {
				t.Errorf("SamplingInterval = %v, want %v", got, tc.want)
			}
		})
	}
}
