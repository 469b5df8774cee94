package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/test/harness"
)

// MetricsAPIService is the APIService name under which metrics.k8s.io/v1beta1 is served.
const MetricsAPIService = "v1beta1.metrics.k8s.io"

var apiServiceGVK = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}

// startMetricsServer runs the real metrics-server (bin/metrics-server, pinned in
// hack/tools/metrics-server) against the sandbox and registers it with kube-apiserver's
// aggregation layer. It scrapes every node's kubelet stand-in at the node's InternalIP and
// status.daemonEndpoints port; the stand-ins' serving certificates are self-signed, hence
// --kubelet-insecure-tls, and it authenticates to them with its kubeconfig's client
// certificate, which the stand-ins verify against the API server's client CA.
func (s *Sandbox) startMetricsServer(ctx context.Context, kc string) error {
	bin, err := harness.Tool("metrics-server")
	if err != nil {
		return err
	}
	port, err := harness.FreePort()
	if err != nil {
		return err
	}
	res := s.Opts.MetricsResolution
	if res == 0 {
		res = 10 * time.Second
	}
	p, err := startProc(s.Opts.Dir, "metrics-server", bin,
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir", filepath.Join(s.Opts.Dir, "metrics-server-certs"),
		"--kubelet-insecure-tls", "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
		"--metric-resolution="+res.String(), "--kubelet-request-timeout=5s", "-v=2")
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	s.metricsServer = p
	return s.RegisterMetricsAPI(ctx, "localhost", port)
}

// RegisterMetricsAPI points the metrics.k8s.io/v1beta1 APIService at host:port, through an
// ExternalName Service (kube-apiserver resolves it to host, as a loopback sandbox has no
// cluster network), and waits until the aggregator reports it Available.
func (s *Sandbox) RegisterMetricsAPI(ctx context.Context, host string, port int) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server", Namespace: "kube-system"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: host,
			Ports: []corev1.ServicePort{{Name: "https", Port: int32(port)}}}}
	if err := s.Client.Create(ctx, svc); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating the metrics-server Service: %w", err)
	}
	as := &unstructured.Unstructured{}
	as.SetGroupVersionKind(apiServiceGVK)
	as.SetName(MetricsAPIService)
	as.Object["spec"] = map[string]any{
		"group": "metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": true,
		"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		"service": map[string]any{"namespace": "kube-system", "name": "metrics-server", "port": int64(port)},
	}
	if err := s.Client.Create(ctx, as); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating APIService %s: %w", MetricsAPIService, err)
	}
	return poll(ctx, 90*time.Second, "metrics.k8s.io Available", func() error {
		if s.metricsServer != nil {
			if done, err := s.metricsServer.exited(); done {
				return fmt.Errorf("metrics-server exited: %v (see %s)", err, s.metricsServer.log)
			}
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(apiServiceGVK)
		if err := s.Client.Get(ctx, client.ObjectKey{Name: MetricsAPIService}, got); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Available" {
				if m["status"] == "True" {
					return nil
				}
				return fmt.Errorf("APIService not available: %v: %v", m["reason"], m["message"])
			}
		}
		return fmt.Errorf("APIService has no Available condition yet")
	})
}

// UnregisterMetricsAPI deletes the APIService, so metrics.k8s.io is no longer served.
func (s *Sandbox) UnregisterMetricsAPI(ctx context.Context) error {
	as := &unstructured.Unstructured{}
	as.SetGroupVersionKind(apiServiceGVK)
	as.SetName(MetricsAPIService)
	return client.IgnoreNotFound(s.Client.Delete(ctx, as))
}

// StopAgent stops a node's ballast-node: SIGKILL when kill (no final flush, as a crash),
// else SIGTERM (a rollout: the agent flushes once more).
func (s *Sandbox) StopAgent(node string, kill bool) error {
	p := s.agents[node]
	if p == nil {
		return fmt.Errorf("node %s runs no agent", node)
	}
	grace := 5 * time.Second
	if kill {
		grace = 0
	}
	p.stop(grace)
	delete(s.agents, node)
	return nil
}

// StartAgent starts (again) a node's ballast-node.
func (s *Sandbox) StartAgent(node string) error {
	for _, n := range s.Nodes {
		if n.Name == node {
			if s.agents[node] != nil {
				return fmt.Errorf("node %s already runs an agent", node)
			}
			return s.startAgent(filepath.Join(s.Opts.Dir, "kubeconfig"), n)
		}
	}
	return fmt.Errorf("no node %s", node)
}
