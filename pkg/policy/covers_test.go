package policy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestCovers(t *testing.T) {
	compile := func(kind, ns string, sel ballastv1.PolicySelector) *Compiled {
		c, err := Compile(kind, ns, "p", 1, ballastv1.ResourcePolicySpec{Selector: sel,
			Metrics: []ballastv1.MetricSpec{{Resource: "cpu", Field: "request", Source: "s", Aggregation: "p95"}}}, Floors{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	web := map[string]string{"app": "web"}
	cases := map[string]struct {
		c      *Compiled
		ns     string
		labels map[string]string
		want   bool
	}{
		"cluster policy, no selector":    {compile(ballastv1.KindClusterResourcePolicy, "", ballastv1.PolicySelector{}), "shop", web, true},
		"resource policy, own namespace": {compile(ballastv1.KindResourcePolicy, "shop", ballastv1.PolicySelector{}), "shop", web, true},
		"resource policy, other ns":      {compile(ballastv1.KindResourcePolicy, "shop", ballastv1.PolicySelector{}), "intruder", web, false},
		"namespace excluded":             {compile(ballastv1.KindClusterResourcePolicy, "", ballastv1.PolicySelector{Namespaces: ballastv1.NamespaceSelector{Exclude: []string{"intruder"}}}), "intruder", web, false},
		"kinds do not matter":            {compile(ballastv1.KindClusterResourcePolicy, "", ballastv1.PolicySelector{Kinds: []string{"Deployment"}}), "shop", web, true},
		"label selector does not match":  {compile(ballastv1.KindClusterResourcePolicy, "", ballastv1.PolicySelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}), "shop", web, false},
		"label selector matches":         {compile(ballastv1.KindClusterResourcePolicy, "", ballastv1.PolicySelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}), "shop", web, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := c.c.Covers(c.ns, c.labels, nil); got != c.want {
				t.Errorf("Covers = %t, want %t", got, c.want)
			}
		})
	}
}
