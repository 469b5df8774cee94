package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// TestRenderResourceMetrics parses the stand-in's /metrics/resource with the Prometheus text
// parser and checks the series metrics-server reads: per-container cumulative cpu and
// working set with the sample's own timestamp, and node totals.
func TestRenderResourceMetrics(t *testing.T) {
	at := time.Unix(1_800_000_000, 250e6)
	samples := []resourceSample{
		{Namespace: "team-a", Pod: "web-1", Container: "app", CPUSeconds: 12.5, WorkingSetBytes: 160 * mi, Started: at.Add(-time.Hour), At: at},
		{Namespace: "team-a", Pod: "web-1", Container: "sidecar", CPUSeconds: 0.5, WorkingSetBytes: 8 * mi, Started: at.Add(-time.Hour), At: at},
	}
	text := renderResourceMetrics(samples, at.Add(-2*time.Hour), at.Add(time.Second))
	parser := expfmt.NewTextParser(pmodel.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not Prometheus text format: %v\n%s", err, text)
	}
	for _, name := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
		"container_start_time_seconds", "node_cpu_usage_seconds_total", "node_memory_working_set_bytes",
		"pod_cpu_usage_seconds_total", "pod_memory_working_set_bytes", "resource_scrape_error"} {
		if fams[name] == nil {
			t.Errorf("family %s missing", name)
		}
	}
	cpu := fams["container_cpu_usage_seconds_total"]
	if cpu == nil || len(cpu.Metric) != 2 {
		t.Fatalf("want 2 container cpu series, got %v", cpu)
	}
	m := cpu.Metric[0]
	labels := pmodel.LabelSet{}
	for _, l := range m.Label {
		labels[pmodel.LabelName(l.GetName())] = pmodel.LabelValue(l.GetValue())
	}
	if labels["container"] != "app" || labels["pod"] != "web-1" || labels["namespace"] != "team-a" {
		t.Errorf("labels %v", labels)
	}
	if m.GetCounter().GetValue() != 12.5 || m.GetTimestampMs() != at.UnixMilli() {
		t.Errorf("cpu sample %v at %d, want 12.5 at %d", m.GetCounter().GetValue(), m.GetTimestampMs(), at.UnixMilli())
	}
	if got := fams["pod_memory_working_set_bytes"].Metric[0].GetGauge().GetValue(); got != 168*mi {
		t.Errorf("pod working set %v, want %v", got, 168*mi)
	}
}
