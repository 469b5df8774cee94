package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Identity labels of the sandbox's apps (the chart's default).
var identityLabels = []string{"app.kubernetes.io/name", "app.kubernetes.io/component"}

// configure installs what the chart would: BallastConfig, the two MetricsSources at the
// sandbox's cadence, and the default ClusterResourcePolicy of SPEC §5.2 with the sandbox's
// readiness preset (minutes, not a day).
func (s *Sandbox) configure(ctx context.Context) error {
	interval := s.Opts.SampleInterval.String()
	retention := "24h"
	if s.Opts.Retention > 0 {
		retention = s.Opts.Retention.String()
	}
	objs := []ballastObject{
		&ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
			Spec: ballastv1.BallastConfigSpec{IdentityLabels: identityLabels, OrphanTTL: "1h", RetentionWindow: retention}},
		&ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes-metrics"},
			Spec: ballastv1.MetricsSourceSpec{Type: ballastv1.SourceTypeKubernetesMetrics, Config: ballastv1.MetricsSourceConfig{PollInterval: interval}}},
		&ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-summary"},
			Spec: ballastv1.MetricsSourceSpec{Type: ballastv1.SourceTypeKubeletSummary, Config: ballastv1.MetricsSourceConfig{PollInterval: interval}}},
		&ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: ballastv1.ResourcePolicySpec{
			Metrics: []ballastv1.MetricSpec{
				{Resource: "cpu", Field: "request", Source: "kubernetes-metrics", Aggregation: "avg", Headroom: "1.25"},
				{Resource: "memory", Field: "request", Source: "kubernetes-metrics", Aggregation: "p75"},
				{Resource: "memory", Field: "limit", Source: "kubernetes-metrics", Aggregation: "p99", Headroom: "1.2"},
			},
			Readiness: s.Opts.Readiness,
			// Resize every 10s instead of 15m, so the demo's resize rung steps within minutes.
			Behaviors: ballastv1.Behaviors{Resize: ballastv1.ResizeBehavior{Interval: "10s"}},
		}},
	}
	for _, o := range objs {
		if err := s.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

type ballastObject = client.Object

func httpOK(url string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// agentArgs are ballast-node's flags for one simulated node.
func agentArgs(kubeconfig string, n *Node, redisURL string, health, debug int) []string {
	return []string{
		"--kubeconfig", kubeconfig,
		"--node-name", n.Name,
		"--redis-url", redisURL,
		"--cgroup-root", n.CgroupRoot,
		"--kubelet-url", n.Kubelet.URL,
		"--kubelet-token-file", n.TokenFile,
		"--kubelet-ca-file", n.CAFile,
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(health),
		"--debug-bind-address", "127.0.0.1:" + strconv.Itoa(debug),
		"--metrics-bind-address", "0",
		"--flush-interval", "2s",
		"--log-format", "text",
	}
}
