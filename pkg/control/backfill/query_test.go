package backfill

import (
	"testing"
	"time"
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
