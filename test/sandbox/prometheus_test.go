package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRenderCAdvisorMetrics parses the stand-in's /metrics/cadvisor and kube_pod_labels with
// the Prometheus text parser: per-container cpu counters and working sets with the sample's
// timestamp, the pod cgroup's working set as the containers' sum under container="", and
// pod labels sanitized the way kube-state-metrics does.
func TestRenderCAdvisorMetrics(t *testing.T) {
	at := time.Unix(1_800_000_000, 250e6)
	text := renderCAdvisorMetrics([]resourceSample{
		{Namespace: "team-a", Pod: "web-1", UID: "u1", Container: "sidecar", CPUSeconds: 0.5, WorkingSetBytes: 8 * mi, At: at},
		{Namespace: "team-a", Pod: "web-1", UID: "u1", Container: "app", CPUSeconds: 12.5, WorkingSetBytes: 160 * mi, At: at},
		{Namespace: "team-b", Pod: "web-2", UID: "u2", Container: "app", CPUSeconds: 3, WorkingSetBytes: 100 * mi, At: at},
	}) + kubePodLabels([]corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-1", UID: "u1",
		Labels: map[string]string{"app.kubernetes.io/name": "shop", "tier": "web"}}}})
	parser := expfmt.NewTextParser(pmodel.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not Prometheus text format: %v\n%s", err, text)
	}
	get := func(family string, want map[string]string) (float64, int64, bool) {
		for _, m := range fams[family].GetMetric() {
			ok := true
			for k, v := range want {
				found := false
				for _, l := range m.GetLabel() {
					if l.GetName() == k && l.GetValue() == v {
						found = true
					}
				}
				ok = ok && found
			}
			if ok {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue(), m.GetTimestampMs(), true
			}
		}
		return 0, 0, false
	}
	if v, ts, ok := get("container_cpu_usage_seconds_total", map[string]string{"namespace": "team-a", "pod": "web-1", "container": "app"}); !ok || v != 12.5 || ts != at.UnixMilli() {
		t.Errorf("app cpu %v at %d (found %v), want 12.5 at %d", v, ts, ok, at.UnixMilli())
	}
	if v, _, ok := get("container_memory_working_set_bytes", map[string]string{"pod": "web-1", "container": ""}); !ok || v != 168*mi {
		t.Errorf("pod cgroup working set %v (found %v), want %v", v, ok, 168*mi)
	}
	if v, _, ok := get("container_memory_working_set_bytes", map[string]string{"pod": "web-2", "container": ""}); !ok || v != 100*mi {
		t.Errorf("web-2 pod cgroup working set %v (found %v), want %v", v, ok, 100*mi)
	}
	if n := len(fams["container_memory_working_set_bytes"].GetMetric()); n != 5 {
		t.Errorf("%d working-set series, want 3 containers + 2 pods", n)
	}
	if _, _, ok := get("kube_pod_labels", map[string]string{"namespace": "team-a", "pod": "web-1", "label_app_kubernetes_io_name": "shop", "label_tier": "web"}); !ok {
		t.Errorf("kube_pod_labels missing or wrongly named:\n%s", text)
	}
}
