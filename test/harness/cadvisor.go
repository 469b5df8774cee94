package harness

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// PodUsage is one pod of a generated history: what a kubelet's cAdvisor endpoint
// (/metrics/cadvisor) and kube-state-metrics would have exposed for it. It is a stand-in
// for those two sources, written as OpenMetrics for promtool's TSDB backfill.
type PodUsage struct {
	Namespace, Pod string
	// Labels are the pod's labels (kube_pod_labels exposes them as label_<sanitized>).
	Labels map[string]string
	// Containers maps container name → usage at time t (cores, working-set bytes).
	Containers map[string]func(t time.Time) (cores float64, workingSetBytes float64)
}

// WriteCAdvisorHistory writes the pods' container_cpu_usage_seconds_total (a counter
// integrating the cores), container_memory_working_set_bytes (per container, and the pod's
// own cgroup with container="" as the kubelet exposes it) and kube_pod_labels, one sample
// every step over [start, end], as OpenMetrics text ending in "# EOF".
func WriteCAdvisorHistory(w io.Writer, pods []PodUsage, start, end time.Time, step time.Duration) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	ts := func(t time.Time) string { return fmt.Sprintf("%d.%03d", t.Unix(), t.Nanosecond()/1e6) }
	fmt.Fprintln(bw, "# TYPE container_cpu_usage_seconds counter")
	for _, p := range pods {
		for _, c := range sortedContainers(p) {
			f := p.Containers[c]
			total := 0.0
			for t := start; !t.After(end); t = t.Add(step) {
				cores, _ := f(t)
				total += cores * step.Seconds()
				fmt.Fprintf(bw, "container_cpu_usage_seconds_total{container=%q,id=\"/kubepods/%s/%s\",image=\"app:1\",namespace=%q,pod=%q} %g %s\n",
					c, p.Pod, c, p.Namespace, p.Pod, total, ts(t))
			}
		}
	}
	fmt.Fprintln(bw, "# TYPE container_memory_working_set_bytes gauge")
	for _, p := range pods {
		cs := sortedContainers(p)
		for _, c := range cs {
			f := p.Containers[c]
			for t := start; !t.After(end); t = t.Add(step) {
				_, ws := f(t)
				fmt.Fprintf(bw, "container_memory_working_set_bytes{container=%q,id=\"/kubepods/%s/%s\",image=\"app:1\",namespace=%q,pod=%q} %.0f %s\n",
					c, p.Pod, c, p.Namespace, p.Pod, ws, ts(t))
			}
		}
		for t := start; !t.After(end); t = t.Add(step) { // the pod cgroup: never a container's sample
			sum := 0.0
			for _, c := range cs {
				_, ws := p.Containers[c](t)
				sum += ws
			}
			fmt.Fprintf(bw, "container_memory_working_set_bytes{container=\"\",id=\"/kubepods/%s\",namespace=%q,pod=%q} %.0f %s\n",
				p.Pod, p.Namespace, p.Pod, sum, ts(t))
		}
	}
	fmt.Fprintln(bw, "# TYPE kube_pod_labels gauge")
	for _, p := range pods {
		keys := make([]string, 0, len(p.Labels))
		for k := range p.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, ",label_%s=%q", sanitizeLabel(k), p.Labels[k])
		}
		for t := start; !t.After(end); t = t.Add(step) {
			fmt.Fprintf(bw, "kube_pod_labels{namespace=%q,pod=%q,uid=\"uid-%s\"%s} 1 %s\n", p.Namespace, p.Pod, p.Pod, b.String(), ts(t))
		}
	}
	fmt.Fprintln(bw, "# EOF")
	return bw.Flush()
}

func sortedContainers(p PodUsage) []string {
	cs := make([]string, 0, len(p.Containers))
	for c := range p.Containers {
		cs = append(cs, c)
	}
	sort.Strings(cs)
	return cs
}

// sanitizeLabel is kube-state-metrics' label-name sanitizing (written apart from
// pkg/control/backfill on purpose: the test checks one against the other).
func sanitizeLabel(k string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, k)
}
