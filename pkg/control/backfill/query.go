package backfill

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// The PromQL of a backfill. A profile's pods are selected through kube-state-metrics'
// kube_pod_labels (one series per pod, its labels as label_<sanitized name>) joined on
// namespace/pod with the cAdvisor series the kubelets expose, so pods that ran before
// Ballast was installed, in any namespace, count: the same pooling a profile does.

// LabelName is kube-state-metrics' name for pod label key k: "label_" and k with every
// character outside [a-zA-Z0-9_] replaced by "_".
func LabelName(k string) string {
	var b strings.Builder
	b.WriteString("label_")
	for _, r := range k {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// podSelector is the kube_pod_labels selector for a profile's selectorLabels; a missing
// label (the --missing-- sentinel) is an empty value, as kube-state-metrics exports it.
func podSelector(selectorLabels map[string]string) string {
	keys := make([]string, 0, len(selectorLabels))
	for k := range selectorLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := selectorLabels[k]
		if v == ballastv1.MissingSentinel {
			v = ""
		}
		parts = append(parts, LabelName(k)+"="+strconv.Quote(v))
	}
	return "kube_pod_labels{" + strings.Join(parts, ",") + "}"
}

// containers selects the containers' own cgroups (not the pod's, "", nor the sandbox's, "POD").
const containers = `container!="",container!="POD"`

// CPUQuery is the per-container cpu usage rate (cores) of the profile's pods.
func CPUQuery(selectorLabels map[string]string, rateWindow time.Duration) string {
	return fmt.Sprintf(`sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{%s}[%ds])) * on (namespace, pod) group_left() max by (namespace, pod) (%s)`,
		containers, int64(rateWindow/time.Second), podSelector(selectorLabels))
}

// MemoryQuery is the per-container working set (bytes) of the profile's pods.
func MemoryQuery(selectorLabels map[string]string) string {
	return fmt.Sprintf(`max by (namespace, pod, container) (container_memory_working_set_bytes{%s}) * on (namespace, pod) group_left() max by (namespace, pod) (%s)`,
		containers, podSelector(selectorLabels))
}
