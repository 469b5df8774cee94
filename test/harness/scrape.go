package harness

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// LiveCAdvisor is a stand-in, over plain HTTP, for what a Prometheus scrapes in a cluster:
// a kubelet's cAdvisor endpoint (/metrics/cadvisor: container_cpu_usage_seconds_total, a
// counter integrating each container's cores since the server started, and
// container_memory_working_set_bytes per container and for the pod's own cgroup) and
// kube-state-metrics (/metrics: kube_pod_labels), in the Prometheus text format, computed
// at each scrape from the same usage models as WriteCAdvisorHistory.
type LiveCAdvisor struct {
	URL string
	srv *httptest.Server

	mu   sync.Mutex
	pods []PodUsage
	cpu  map[string]float64 // namespace/pod/container → cpu seconds so far
	last time.Time          // the instant cpu is integrated up to
}

// StartLiveCAdvisor serves pods until Close.
func StartLiveCAdvisor(pods []PodUsage) *LiveCAdvisor {
	l := &LiveCAdvisor{pods: pods, cpu: map[string]float64{}, last: time.Now()}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics/cadvisor", l.serveCAdvisor)
	mux.HandleFunc("/metrics", l.serveLabels)
	l.srv = httptest.NewServer(mux)
	l.URL = l.srv.URL
	return l
}

// Close stops the server.
func (l *LiveCAdvisor) Close() { l.srv.Close() }

// advance integrates every container's cores up to now, in steps of at most 100 ms.
func (l *LiveCAdvisor) advance(now time.Time) {
	for t := l.last; t.Before(now); {
		next := minTime(t.Add(100*time.Millisecond), now)
		dt := next.Sub(t).Seconds()
		for _, p := range l.pods {
			for c, f := range p.Containers {
				cores, _ := f(t)
				l.cpu[p.Namespace+"/"+p.Pod+"/"+c] += cores * dt
			}
		}
		t = next
	}
	if now.After(l.last) {
		l.last = now
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (l *LiveCAdvisor) serveCAdvisor(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance(now)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# TYPE container_cpu_usage_seconds_total counter")
	for _, p := range l.pods {
		for _, c := range sortedContainers(p) {
			fmt.Fprintf(bw, "container_cpu_usage_seconds_total{container=%q,id=\"/kubepods/%s/%s\",image=\"app:1\",namespace=%q,pod=%q} %g\n",
				c, p.Pod, c, p.Namespace, p.Pod, l.cpu[p.Namespace+"/"+p.Pod+"/"+c])
		}
	}
	fmt.Fprintln(bw, "# TYPE container_memory_working_set_bytes gauge")
	for _, p := range l.pods {
		sum := 0.0
		for _, c := range sortedContainers(p) {
			_, ws := p.Containers[c](now)
			sum += ws
			fmt.Fprintf(bw, "container_memory_working_set_bytes{container=%q,id=\"/kubepods/%s/%s\",image=\"app:1\",namespace=%q,pod=%q} %.0f\n",
				c, p.Pod, c, p.Namespace, p.Pod, ws)
		}
		fmt.Fprintf(bw, "container_memory_working_set_bytes{container=\"\",id=\"/kubepods/%s\",namespace=%q,pod=%q} %.0f\n",
			p.Pod, p.Namespace, p.Pod, sum)
	}
	_ = bw.Flush()
}

func (l *LiveCAdvisor) serveLabels(w http.ResponseWriter, _ *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# TYPE kube_pod_labels gauge")
	for _, p := range l.pods {
		keys := make([]string, 0, len(p.Labels))
		for k := range p.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, ",label_%s=%q", sanitizeLabel(k), p.Labels[k])
		}
		fmt.Fprintf(bw, "kube_pod_labels{namespace=%q,pod=%q,uid=\"uid-%s\"%s} 1\n", p.Namespace, p.Pod, p.Pod, b.String())
	}
	_ = bw.Flush()
}

// StartScrapingPrometheus starts a real Prometheus with an empty TSDB and a scrape
// configuration: every interval it scrapes the kubelet stand-in's /metrics/cadvisor (job
// kubelet-cadvisor) and kube-state-metrics' stand-in /metrics (job kube-state-metrics) at
// the base URLs given, with honor_labels so the sources' namespace and pod labels stay
// as they expose them.
func StartScrapingPrometheus(cadvisorURL, kubeStateURL string, interval time.Duration) (*Prometheus, error) {
	host := func(raw string) (string, error) {
		u, err := url.Parse(raw)
		if err != nil {
			return "", err
		}
		return u.Host, nil
	}
	kubelet, err := host(cadvisorURL)
	if err != nil {
		return nil, err
	}
	ksm, err := host(kubeStateURL)
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
scrape_configs:
  - job_name: kubelet-cadvisor
    metrics_path: /metrics/cadvisor
    honor_labels: true
    static_configs:
      - targets: [%[2]q]
  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: [%[3]q]
`, interval, kubelet, ksm)
	return StartPrometheusConfig(cfg, 0)
}
