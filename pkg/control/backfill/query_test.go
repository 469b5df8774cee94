package backfill

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestQueries(t *testing.T) {
	sel := map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/component": "--missing--"}
	cases := map[string]struct{ got, want string }{
		"label name": {LabelName("app.kubernetes.io/name"), "label_app_kubernetes_io_name"},
		"cpu": {CPUQuery(sel, 5*time.Minute),
			`sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{container!="",container!="POD"}[300s])) * on (namespace, pod) group_left() max by (namespace, pod) (kube_pod_labels{label_app_kubernetes_io_component="",label_app_kubernetes_io_name="web"})`},
		"memory": {MemoryQuery(sel),
			`max by (namespace, pod, container) (container_memory_working_set_bytes{container!="",container!="POD"}) * on (namespace, pod) group_left() max by (namespace, pod) (kube_pod_labels{label_app_kubernetes_io_component="",label_app_kubernetes_io_name="web"})`},
		"quoted": {podSelector(map[string]string{"a": `x"y`}), `kube_pod_labels{label_a="x\"y"}`},
	}
	for name, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", name, tc.got, tc.want)
		}
	}
}

// TestScopeMatchers: the governing policy's selector as kube_pod_labels matchers.
func TestScopeMatchers(t *testing.T) {
	cases := map[string]struct {
		sel       ballastv1.PolicySelector
		namespace string
		want      []string
		err       bool
	}{
		"none":            {},
		"resource policy": {namespace: "shop", want: []string{`namespace="shop"`}},
		"namespaces": {sel: ballastv1.PolicySelector{Namespaces: ballastv1.NamespaceSelector{Include: []string{"dev.a", "/team-.*/"}, Exclude: []string{"team-x"}}},
			want: []string{`namespace=~"(?:dev\\.a)|(?:team-.*)"`, `namespace!~"(?:team-x)"`}},
		"label selector": {sel: ballastv1.PolicySelector{LabelSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"tier": "web", "app.kubernetes.io/part-of": "shop"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "track", Operator: metav1.LabelSelectorOpIn, Values: []string{"stable", "v1.2"}},
				{Key: "batch", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"yes"}},
				{Key: "owner", Operator: metav1.LabelSelectorOpExists},
				{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist},
			}}},
			want: []string{`label_app_kubernetes_io_part_of="shop"`, `label_tier="web"`, `label_track=~"stable|v1\\.2"`,
				`label_batch!~"yes"`, `label_owner!=""`, `label_legacy=""`}},
		"bad regex":    {sel: ballastv1.PolicySelector{Namespaces: ballastv1.NamespaceSelector{Include: []string{"/a(/"}}}, err: true},
		"bad operator": {sel: ballastv1.PolicySelector{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Gt"}}}}, err: true},
	}
	for name, tc := range cases {
		got, err := ScopeMatchers(tc.sel, tc.namespace)
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v", name, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	scoped := CPUQuery(map[string]string{"app": "web"}, time.Minute, `label_tier!~"batch"`)
	if want := `(kube_pod_labels{label_app="web",label_tier!~"batch"})`; !strings.HasSuffix(scoped, want) {
		t.Errorf("scoped cpu query %s, want it to end in %s", scoped, want)
	}
}
