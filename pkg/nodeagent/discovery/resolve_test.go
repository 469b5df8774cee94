package discovery

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

func TestResolve(t *testing.T) {
	metrics := func(sources ...string) []ballastv1.MetricSpec {
		var out []ballastv1.MetricSpec
		for _, s := range sources {
			out = append(out, ballastv1.MetricSpec{Resource: "cpu", Field: "request", Source: s, Aggregation: "p95"})
		}
		return out
	}
	in := Inputs{
		Policies: map[string][]ballastv1.MetricSpec{
			"default":      metrics("metrics", "summary"),
			"team/fast":    metrics("every-second"),
			"sub-second":   metrics("too-fast"),
			"unknown-type": metrics("exotic"),
		},
		Sources: map[string]policy.Source{
			"metrics":      {Type: ballastv1.SourceTypeKubernetesMetrics, PollInterval: "10s"},
			"summary":      {Type: ballastv1.SourceTypeKubeletSummary, PollInterval: "30s"},
			"every-second": {Type: ballastv1.SourceTypeKubernetesMetrics, PollInterval: "1s"},
			"too-fast":     {Type: ballastv1.SourceTypeKubernetesMetrics, PollInterval: "100ms"},
			"exotic":       {Type: "prometheus", PollInterval: "1s"},
		},
		Hashes: map[string]string{
			"web--default": "0123456789abcdef",
			"new--default": "",
			"bad--default": "NOT-HEX{}",
		},
		MinInterval: time.Second,
	}
	cases := map[string]struct {
		pod          Pod
		wantInterval time.Duration
		wantHash     string
	}{
		"smallest pollInterval of the policy's sources": {
			Pod{PolicyRef: "default", ProfileRef: "web--default"}, 10 * time.Second, "0123456789abcdef"},
		"a ResourcePolicy is named namespace/name": {Pod{PolicyRef: "team/fast"}, time.Second, ""},
		"no policy: 60s": {Pod{}, 60 * time.Second, ""},
		"policy-ref naming a missing policy: 60s":    {Pod{PolicyRef: "gone"}, 60 * time.Second, ""},
		"unknown source types do not count":          {Pod{PolicyRef: "unknown-type"}, 60 * time.Second, ""},
		"never below the agent's floor":              {Pod{PolicyRef: "sub-second"}, time.Second, ""},
		"profile without hash yet":                   {Pod{ProfileRef: "new--default"}, 60 * time.Second, ""},
		"profile not created yet":                    {Pod{ProfileRef: "later--default"}, 60 * time.Second, ""},
		"a hash that is not store input is unusable": {Pod{ProfileRef: "bad--default"}, 60 * time.Second, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := Resolve(c.pod, in)
			if got.Interval != c.wantInterval || got.Hash != c.wantHash {
				t.Errorf("interval %v hash %q, want %v %q", got.Interval, got.Hash, c.wantInterval, c.wantHash)
			}
		})
	}
}

func TestBuildSortsAndResolves(t *testing.T) {
	got := Build([]Pod{{Namespace: "b", Name: "x"}, {Namespace: "a", Name: "z"}, {Namespace: "a", Name: "y"}}, Inputs{})
	var keys []string
	for _, p := range got {
		keys = append(keys, p.Key())
		if p.Interval != ballastv1.DefaultPollInterval {
			t.Errorf("%s: interval %v", p.Key(), p.Interval)
		}
	}
	if diff := cmp.Diff([]string{"a/y", "a/z", "b/x"}, keys); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestPolicyKey(t *testing.T) {
	if got := PolicyKey("", "default"); got != "default" {
		t.Errorf("cluster policy key %q", got)
	}
	if got := PolicyKey("team", "fast"); got != "team/fast" {
		t.Errorf("namespaced policy key %q", got)
	}
}

func TestSlimProfileKeepsNameAndHash(t *testing.T) {
	wp := &ballastv1.WorkloadProfile{}
	wp.Name, wp.ResourceVersion = "web", "7"
	wp.Status.MeasurementHash = "0123456789abcdef"
	wp.Status.Containers = []ballastv1.ContainerProfile{{Name: "app"}}
	wp.Annotations = map[string]string{"big": "value"}
	out, err := slimProfile(wp)
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*ballastv1.WorkloadProfile)
	if slim.Name != "web" || slim.Status.MeasurementHash != wp.Status.MeasurementHash || slim.ResourceVersion != "7" ||
		len(slim.Status.Containers) != 0 || len(slim.Annotations) != 0 {
		t.Errorf("slim profile %+v", slim)
	}
}
