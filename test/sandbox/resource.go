package sandbox

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

// resourceSample is one container's cumulative cpu and working set at one instant, as the
// kubelet's /metrics/resource reports it.
type resourceSample struct {
	Namespace, Pod, Container string
	UID                       string  // the pod's (for cAdvisor's cgroup id)
	CPUSeconds                float64 // cumulative core-seconds
	WorkingSetBytes           float64
	Started, At               time.Time
}

// serveResource answers GET /metrics/resource (the kubelet's resource metrics, Prometheus
// text format with sample timestamps), from the same workload models that drive the cgroup
// tree the agent reads, so metrics-server and the agent see the same usage.
func (n *Node) serveResource(w http.ResponseWriter) {
	n.mu.Lock()
	samples := make([]resourceSample, 0, len(n.containers))
	for _, sc := range n.containers {
		if sc.at.IsZero() {
			continue // not advanced yet: the kubelet has no stats for it either
		}
		samples = append(samples, resourceSample{Namespace: sc.ns, Pod: sc.pod, Container: sc.name,
			CPUSeconds: sc.usageUsec / 1e6, WorkingSetBytes: sc.last.MemoryBytes, Started: sc.started, At: sc.at})
	}
	n.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(renderResourceMetrics(samples, n.start, time.Now())))
}

// renderResourceMetrics renders samples the way the kubelet does: container_, pod_ and
// node_ cpu and working-set series with millisecond timestamps, plus
// container_start_time_seconds and resource_scrape_error. The node's series are the sums
// of its containers' (a stand-in has no system overhead) and are stamped now.
func renderResourceMetrics(samples []resourceSample, nodeStart, now time.Time) string {
	sort.Slice(samples, func(i, j int) bool {
		a, b := samples[i], samples[j]
		return a.Namespace+"/"+a.Pod+"/"+a.Container < b.Namespace+"/"+b.Pod+"/"+b.Container
	})
	var b strings.Builder
	family := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s [STABLE] %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	ctr := func(s resourceSample) string {
		return fmt.Sprintf(`container=%q,namespace=%q,pod=%q`, s.Container, s.Namespace, s.Pod)
	}
	type podSum struct {
		cpu, mem float64
		at       time.Time
	}
	pods := map[[2]string]*podSum{}
	var order [][2]string
	var nodeCPU, nodeMem float64
	for _, s := range samples {
		k := [2]string{s.Namespace, s.Pod}
		p := pods[k]
		if p == nil {
			p = &podSum{}
			pods[k] = p
			order = append(order, k)
		}
		p.cpu, p.mem = p.cpu+s.CPUSeconds, p.mem+s.WorkingSetBytes
		if s.At.After(p.at) {
			p.at = s.At
		}
		nodeCPU, nodeMem = nodeCPU+s.CPUSeconds, nodeMem+s.WorkingSetBytes
	}
	family("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the container in core-seconds")
	for _, s := range samples {
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{%s} %g %d\n", ctr(s), s.CPUSeconds, ms(s.At))
	}
	family("container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes")
	for _, s := range samples {
		fmt.Fprintf(&b, "container_memory_working_set_bytes{%s} %g %d\n", ctr(s), s.WorkingSetBytes, ms(s.At))
	}
	family("container_start_time_seconds", "gauge", "Start time of the container since unix epoch in seconds")
	for _, s := range samples {
		fmt.Fprintf(&b, "container_start_time_seconds{%s} %g %d\n", ctr(s), float64(s.Started.UnixNano())/1e9, ms(s.At))
	}
	family("node_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the node in core-seconds")
	fmt.Fprintf(&b, "node_cpu_usage_seconds_total %g %d\n", nodeCPU+now.Sub(nodeStart).Seconds()*0.01, ms(now))
	family("node_memory_working_set_bytes", "gauge", "Current working set of the node in bytes")
	fmt.Fprintf(&b, "node_memory_working_set_bytes %g %d\n", nodeMem+64*mi, ms(now))
	family("pod_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the pod in core-seconds")
	for _, k := range order {
		fmt.Fprintf(&b, "pod_cpu_usage_seconds_total{namespace=%q,pod=%q} %g %d\n", k[0], k[1], pods[k].cpu, ms(pods[k].at))
	}
	family("pod_memory_working_set_bytes", "gauge", "Current working set of the pod in bytes")
	for _, k := range order {
		fmt.Fprintf(&b, "pod_memory_working_set_bytes{namespace=%q,pod=%q} %g %d\n", k[0], k[1], pods[k].mem, ms(pods[k].at))
	}
	family("resource_scrape_error", "gauge", "1 if there was an error while getting container metrics, 0 otherwise")
	b.WriteString("resource_scrape_error 0\n")
	return b.String()
}

func certPool(files ...string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for _, file := range files {
		if file == "" {
			continue
		}
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading client CA %s: %w", file, err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA %s holds no certificate", file)
		}
	}
	return pool, nil
}
