package recommend

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func share(node string, n int64, mean float64) NodeShare {
	return NodeShare{Node: node, Samples: n, Sum: float64(n) * mean}
}

func TestOutlierNodes(t *testing.T) {
	cases := map[string]struct {
		shares []NodeShare
		want   []string // outlier nodes
	}{
		"three nodes agree, one writes 10×": {
			shares: []NodeShare{share("a", 60, 100), share("b", 60, 110), share("c", 60, 90), share("d", 60, 1000)},
			want:   []string{"d"},
		},
		"all agree within the factor": {
			shares: []NodeShare{share("a", 60, 100), share("b", 60, 300), share("c", 60, 390)},
		},
		"a single node cannot be cross-checked": {
			shares: []NodeShare{share("a", 60, 1e9)},
		},
		"two nodes: one peer is not enough to judge": {
			shares: []NodeShare{share("a", 60, 100), share("b", 60, 5000)},
		},
		"peers with too few samples do not count": {
			shares: []NodeShare{share("a", 60, 100), share("b", 9, 100), share("c", 9, 100)},
		},
		"the outlier needs enough samples too": {
			shares: []NodeShare{share("a", 60, 100), share("b", 60, 100), share("c", 5, 5000)},
		},
		"a node below the others is not bounded": {
			shares: []NodeShare{share("a", 60, 100), share("b", 60, 100), share("c", 60, 1)},
		},
		"idle peers: compared against one unit": {
			shares: []NodeShare{share("a", 60, 0), share("b", 60, 0), share("c", 60, 5)},
			want:   []string{"c"},
		},
		"two outliers among five": {
			shares: []NodeShare{share("a", 60, 100), share("b", 60, 100), share("c", 60, 100), share("x", 60, 900), share("y", 60, 2000)},
			want:   []string{"x", "y"},
		},
		"just above the factor": {
			shares: []NodeShare{share("a", 60, 100), share("b", 60, 100), share("c", 60, 401)},
			want:   []string{"c"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, o := range OutlierNodes(tc.shares, OutlierParams{}) {
				got = append(got, o.Node)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outliers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBoundOutliersCapsTheRecommendation: a 10× node caps request and limit at 4 × the
// other nodes' median mean, and the condition names the node, resource and both figures.
func TestBoundOutliersCapsTheRecommendation(t *testing.T) {
	cps := []v1.ContainerProfile{{Name: "app", Recommendations: map[string]v1.Recommendation{
		"cpu":    {Request: "1100m", Limit: "1500m", RequestBasis: "p95"},
		"memory": {Request: "100Mi", Limit: "120Mi"},
	}}}
	shares := map[string]map[string][]NodeShare{"app": {
		"cpu":    {share("n1", 60, 100), share("n2", 60, 100), share("n3", 60, 100), share("n4", 60, 1000)},
		"memory": {share("n1", 60, 100<<20), share("n2", 60, 100<<20), share("n3", 60, 100<<20)},
	}}
	got := BoundOutliers(cps, shares, OutlierParams{})
	if len(got) != 1 || got[0].Node != "n4" || got[0].Resource != "cpu" || got[0].Cap != 400 {
		t.Fatalf("outliers = %+v, want n4 cpu capped at 400", got)
	}
	rec := cps[0].Recommendations["cpu"]
	if rec.Request != "400m" || rec.Limit != "400m" || !strings.Contains(rec.RequestBasis, "node n4") {
		t.Errorf("cpu recommendation = %+v, want capped at 400m naming n4", rec)
	}
	if m := cps[0].Recommendations["memory"]; m.Request != "100Mi" || m.Limit != "120Mi" {
		t.Errorf("memory recommendation changed: %+v", m)
	}
	c := OutlierCondition(got, 3, time.Unix(0, 0))
	for _, want := range []string{"node n4", "cpu", "mean 1", "median 100m", "capped at 400m"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("condition message %q lacks %q", c.Message, want)
		}
	}
	if c.Type != v1.ConditionRecommendationBounded || c.Reason != ReasonOutlierNode || c.ObservedGeneration != 3 {
		t.Errorf("condition = %+v", c)
	}
}
