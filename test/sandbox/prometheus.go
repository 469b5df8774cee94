package sandbox

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/test/harness"
)

// serveCAdvisor answers GET /metrics/cadvisor (the kubelet's cAdvisor metrics, Prometheus
// text format with sample timestamps) from the same workload models as the cgroup tree
// and /metrics/resource.
func (n *Node) serveCAdvisor(w http.ResponseWriter) {
	n.mu.Lock()
	samples := make([]resourceSample, 0, len(n.containers))
	for _, sc := range n.containers {
		if sc.at.IsZero() {
			continue
		}
		samples = append(samples, resourceSample{Namespace: sc.ns, Pod: sc.pod, Container: sc.name, UID: sc.uid,
			CPUSeconds: sc.usageUsec / 1e6, WorkingSetBytes: sc.last.MemoryBytes, Started: sc.started, At: sc.at})
	}
	n.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(renderCAdvisorMetrics(samples)))
}

// renderCAdvisorMetrics renders samples the way the kubelet's cAdvisor endpoint does for
// the two series a Prometheus backfill reads: container_cpu_usage_seconds_total (cumulative
// core-seconds) and container_memory_working_set_bytes, per container (labels container,
// id, image, name, namespace, pod) and, for the working set, the pod's own cgroup
// (container="").
func renderCAdvisorMetrics(samples []resourceSample) string {
	sort.Slice(samples, func(i, j int) bool {
		a, b := samples[i], samples[j]
		return a.Namespace+"/"+a.Pod+"/"+a.Container < b.Namespace+"/"+b.Pod+"/"+b.Container
	})
	var b strings.Builder
	lbl := func(s resourceSample) string {
		return fmt.Sprintf(`container=%q,id="/kubepods.slice/pod%s/%s",image="sandbox/app:1",name=%q,namespace=%q,pod=%q`,
			s.Container, s.UID, s.Container, s.Container, s.Namespace, s.Pod)
	}
	b.WriteString("# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.\n# TYPE container_cpu_usage_seconds_total counter\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{%s} %g %d\n", lbl(s), s.CPUSeconds, s.At.UnixMilli())
	}
	b.WriteString("# HELP container_memory_working_set_bytes Current working set in bytes.\n# TYPE container_memory_working_set_bytes gauge\n")
	type pod struct {
		ns, name, uid string
		ws            float64
		at            time.Time
	}
	var pods []*pod
	for _, s := range samples {
		fmt.Fprintf(&b, "container_memory_working_set_bytes{%s} %g %d\n", lbl(s), s.WorkingSetBytes, s.At.UnixMilli())
		if len(pods) == 0 || pods[len(pods)-1].uid != s.UID {
			pods = append(pods, &pod{ns: s.Namespace, name: s.Pod, uid: s.UID})
		}
		p := pods[len(pods)-1]
		p.ws += s.WorkingSetBytes
		if s.At.After(p.at) {
			p.at = s.At
		}
	}
	for _, p := range pods {
		fmt.Fprintf(&b, "container_memory_working_set_bytes{container=\"\",id=\"/kubepods.slice/pod%s\",image=\"\",name=\"\",namespace=%q,pod=%q} %g %d\n",
			p.uid, p.ns, p.name, p.ws, p.at.UnixMilli())
	}
	return b.String()
}

// kubePodLabels renders kube-state-metrics' kube_pod_labels for pods: one series per pod,
// each pod label as label_<key with every character outside [a-zA-Z0-9_] replaced by _>
// (every label is allow-listed here).
func kubePodLabels(pods []corev1.Pod) string {
	var b strings.Builder
	b.WriteString("# HELP kube_pod_labels Kubernetes labels converted to Prometheus labels.\n# TYPE kube_pod_labels gauge\n")
	for _, p := range pods {
		keys := make([]string, 0, len(p.Labels))
		for k := range p.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "kube_pod_labels{namespace=%q,pod=%q,uid=%q", p.Namespace, p.Name, string(p.UID))
		for _, k := range keys {
			fmt.Fprintf(&b, ",label_%s=%q", strings.Map(func(r rune) rune {
				if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
					return r
				}
				return '_'
			}, k), p.Labels[k])
		}
		b.WriteString("} 1\n")
	}
	return b.String()
}

// startPrometheus runs a real Prometheus (bin/prometheus) on port, scraping every second
// each node's kubelet stand-in /metrics/cadvisor (HTTPS, the node's bearer token) and a
// kube-state-metrics stand-in serving kube_pod_labels for every pod of the API server.
func (s *Sandbox) startPrometheus(ctx context.Context, port int) error {
	s.kubeState = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pods := &corev1.PodList{}
		if err := s.Client.List(r.Context(), pods); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(kubePodLabels(pods.Items)))
	}))
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n")
	fmt.Fprintf(&cfg, "  - job_name: kube-state-metrics\n    honor_labels: true\n    static_configs:\n      - targets: [%q]\n",
		strings.TrimPrefix(s.kubeState.URL, "http://"))
	for _, n := range s.Nodes {
		fmt.Fprintf(&cfg, `  - job_name: kubelet-%[1]s
    scheme: https
    metrics_path: /metrics/cadvisor
    honor_labels: true
    tls_config:
      insecure_skip_verify: true
    authorization:
      credentials_file: %[2]q
    static_configs:
      - targets: [%[3]q]
`, n.Name, n.TokenFile, strings.TrimPrefix(n.Kubelet.URL, "https://"))
	}
	p, err := harness.StartPrometheusConfig(cfg.String(), port)
	if err != nil {
		return fmt.Errorf("starting prometheus: %w", err)
	}
	s.prometheus = p
	return harness.Poll(ctx, 30*time.Second, "prometheus scraping every target", func() error {
		return s.prometheusTargetsUp(ctx)
	})
}

// prometheusTargetsUp reports an error until every scrape target answered.
func (s *Sandbox) prometheusTargetsUp(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.PrometheusURL+"/api/v1/query?query=min(up)", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if !strings.Contains(string(body), `,"1"]`) {
		return fmt.Errorf("min(up) is not 1 yet: %s", body)
	}
	return nil
}

// stopPrometheus stops Prometheus and the kube-state-metrics stand-in.
func (s *Sandbox) stopPrometheus() {
	if s.prometheus != nil {
		s.prometheus.Stop()
	}
	if s.kubeState != nil {
		s.kubeState.Close()
	}
}
