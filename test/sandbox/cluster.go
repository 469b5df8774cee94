package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// Options configure a sandbox.
type Options struct {
	// Dir is the sandbox folder: logs/, nodes/, kubeconfig, chart. Created if missing.
	Dir string
	// Nodes is the number of simulated nodes.
	Nodes int
	// ControlBin and NodeBin are the ballast-control and ballast-node binaries.
	ControlBin, NodeBin string
	// SampleInterval is the MetricsSources' pollInterval (the agents' cadence).
	SampleInterval time.Duration
	// Readiness is the default policy's readiness (fast presets for the demo and the test).
	Readiness ballastv1.Readiness
	// Retention is BallastConfig's retentionWindow (default 24h, a day of history).
	Retention time.Duration
	// Progress receives one line per step.
	Progress io.Writer
	// System is what sizes the pods: SystemBallast (the default) or SystemVPA, the real
	// Vertical Pod Autoscaler with metrics-server instead of Ballast (vpa.go).
	System string
	// Seed varies the workload models' noise; two sandboxes with the same seed and nodes
	// see the same sequence.
	Seed uint64
	// VPA tunes the VPA components (SystemVPA only).
	VPA VPAOptions
	// Light nodes keep no cgroup files (for runs without real agents: the scale bench),
	// and Tick is the models' step (default 1 s).
	Light bool
	Tick  time.Duration
	// ControllerQPS raises kube-scheduler's and kube-controller-manager's API client QPS
	// (burst twice that) from their defaults (50 and 20), for the scale bench's mass deploys.
	ControllerQPS int
	// AgentlessNodes is how many of the nodes (the last ones) run no ballast-node, like
	// serverless or virtual nodes.
	AgentlessNodes int
	// MetricsServer runs the real metrics-server (bin/metrics-server) scraping the kubelet
	// stand-ins' /metrics/resource, registered as the metrics.k8s.io APIService; the API
	// server is started with the aggregation layer on.
	MetricsServer bool
	// MetricsResolution is metrics-server's --metric-resolution (default 10s, its minimum).
	MetricsResolution time.Duration
	// ControlArgs are extra ballast-control flags.
	ControlArgs []string
	// ControlMemoryLimit, when > 0, runs ballast-control in a cgroup v1 memory cgroup with
	// that hard limit, as the kubelet would with limits.memory (root only; Sandbox.ControlCgroup).
	ControlMemoryLimit int64
	// StaticNodes run no workload models at all (no agent, no metrics-server reads them):
	// the nodes are kwok Node objects only, for the live scale bench.
	StaticNodes bool
	// DisabledControllers are kube-controller-manager controllers turned off besides the
	// service-account ones (e.g. replicaset-controller when the bench creates pods itself).
	DisabledControllers []string
	// Prometheus runs a real Prometheus (bin/prometheus) scraping every second the kubelet
	// stand-ins' /metrics/cadvisor and a kube-state-metrics stand-in (kube_pod_labels), and
	// points ballast-control's day-0 backfill at it (--history-prometheus-url, a 1 s step
	// and a 5 s rate window).
	Prometheus bool
}

// Systems a sandbox can run.
const (
	SystemBallast = "ballast"
	SystemVPA     = "vpa"
)

// Sandbox is a running sandbox.
type Sandbox struct {
	Opts   Options
	Kube   *harness.Kube
	Valkey *harness.Valkey
	Client client.Client // cached-free admin client
	Nodes  []*Node

	// VPAInfo says where the VPA components listen (SystemVPA only).
	VPAInfo VPAInfo

	procs         []*harness.Proc
	agents        map[string]*harness.Proc // ballast-node per node name
	metricsServer *harness.Proc
	restarts      int    // ballast-control restarts (StartControl)
	healthURL     string // ballast-control's /readyz
	// MetricsURL is ballast-control's Prometheus endpoint (plain HTTP, loopback).
	MetricsURL string
	// ControlCgroup is ballast-control's memory cgroup (Options.ControlMemoryLimit), else nil.
	ControlCgroup *MemCgroup
	// PrometheusURL is the sandbox's Prometheus (Options.Prometheus), else "".
	PrometheusURL  string
	prometheus     *harness.Prometheus
	kubeState      *httptest.Server
	prometheusPort int
	cancel         context.CancelFunc
}

const operatorNS = "ballast-system"

func (s *Sandbox) logf(format string, args ...any) {
	if s.Opts.Progress != nil {
		fmt.Fprintf(s.Opts.Progress, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

// Start brings the whole sandbox up; on error everything started so far is stopped.
func Start(ctx context.Context, o Options) (s *Sandbox, err error) {
	if err := os.MkdirAll(filepath.Join(o.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	s = &Sandbox{Opts: o, agents: map[string]*harness.Proc{}}
	defer func() {
		if err != nil {
			s.Stop()
			err = fmt.Errorf("%w (component logs in %s)", err, filepath.Join(o.Dir, "logs"))
		}
	}()
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel

	s.logf("starting etcd and kube-apiserver v1.37.2 on loopback")
	if s.Kube, err = harness.StartKube(harness.KubeOptions{WithoutCRDs: true, Aggregation: o.MetricsServer || o.System == SystemVPA}); err != nil {
		return s, err
	}
	s.Client = s.Kube.Client
	if err := copyFile(s.Kube.Kubeconfig, filepath.Join(o.Dir, "kubeconfig")); err != nil {
		return s, err
	}
	kc := filepath.Join(o.Dir, "kubeconfig")

	vpa := o.System == SystemVPA
	if !vpa {
		s.logf("installing Ballast's CRDs (ballast-control apply-crds)")
		if err := s.run(ctx, "apply-crds", o.ControlBin, "--kubeconfig", kc, "apply-crds"); err != nil {
			return s, err
		}
	}

	s.logf("starting kube-scheduler, kube-controller-manager and kwok")
	if err := s.startKubeComponents(kc); err != nil {
		return s, err
	}

	if !vpa {
		s.logf("starting Valkey")
		if s.Valkey, err = harness.StartValkey(); err != nil {
			return s, err
		}
		if o.Prometheus {
			// Its port is chosen now, so ballast-control knows where to ask; it starts once
			// the nodes exist (a backfill before that finds it down and retries).
			if s.prometheusPort, err = harness.FreePort(); err != nil {
				return s, err
			}
			s.PrometheusURL = fmt.Sprintf("http://127.0.0.1:%d", s.prometheusPort)
		}
		s.logf("starting ballast-control (controllers + webhook with built-in certificates)")
		if err := s.startControl(ctx, kc); err != nil {
			return s, err
		}
		if err := s.configure(ctx); err != nil {
			return s, err
		}
	}

	for i := 0; i < o.Nodes; i++ {
		name := fmt.Sprintf("sim-node-%d", i+1)
		n, err := newNode(ctx, s.Client, o.Dir, name, o.Seed, s.Kube.ClientCAFile(), s.Kube.KubeletClientCAFile())
		if err != nil {
			return s, err
		}
		s.Nodes = append(s.Nodes, n)
		n.light = o.Light
		tick := o.Tick
		if tick <= 0 {
			tick = time.Second
		}
		if !o.StaticNodes {
			go n.run(rctx, tick)
		}
		if o.Nodes <= 10 {
			s.logf("node %s: cgroup tree %s, kubelet stub %s", name, n.CgroupRoot, n.Kubelet.URL)
		}
		if o.NodeBin == "" || vpa || i >= o.Nodes-o.AgentlessNodes {
			continue // API-side only (the sandbox's own tests), no Ballast at all, or a node without an agent
		}
		s.logf("node %s: cgroup tree %s, kubelet stub %s; starting ballast-node", name, n.CgroupRoot, n.Kubelet.URL)
		if err := s.startAgent(kc, n); err != nil {
			return s, err
		}
	}
	if err := harness.Poll(ctx, 60*time.Second+time.Duration(o.Nodes)*100*time.Millisecond, "nodes Ready", s.nodesReady); err != nil {
		return s, err
	}
	if o.Prometheus {
		s.logf("starting Prometheus scraping the kubelet stand-ins' /metrics/cadvisor and kube_pod_labels every second at %s", s.PrometheusURL)
		if err := s.startPrometheus(ctx, s.prometheusPort); err != nil {
			return s, err
		}
	}
	if o.MetricsServer || vpa {
		s.logf("starting metrics-server and registering %s", MetricsAPIService)
		if err := s.startMetricsServer(ctx, kc); err != nil {
			return s, err
		}
	}
	if vpa {
		if err := s.startVPA(ctx, kc); err != nil {
			return s, err
		}
	}
	s.logf("sandbox ready: KUBECONFIG=%s %s get nodes", abs(kc), abs(filepath.Join(harness.BinDir(), "kubectl")))
	return s, nil
}

// run runs a one-shot command to completion.
func (s *Sandbox) run(ctx context.Context, name, bin string, args ...string) error {
	p, err := harness.StartProc(filepath.Join(s.Opts.Dir, "logs"), name, bin, args...)
	if err != nil {
		return err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Stop(time.Second)
		return ctx.Err()
	}
	if p.Err() != nil {
		return fmt.Errorf("%s failed: %w (see %s)", name, p.Err(), p.Log)
	}
	return nil
}

func (s *Sandbox) startKubeComponents(kc string) error {
	tool := func(n string) (string, error) { return harness.Tool(n) }
	sched, err := tool("kube-scheduler")
	if err != nil {
		return err
	}
	kcm, err := tool("kube-controller-manager")
	if err != nil {
		return err
	}
	kwok, err := tool("kwok")
	if err != nil {
		return err
	}
	p1, _ := harness.FreePort()
	p2, _ := harness.FreePort()
	p3, _ := harness.FreePort()
	stages, err := kwokStages(s.Opts.Dir)
	if err != nil {
		return err
	}
	controllers := "--controllers=*,-serviceaccount-token,-serviceaccount"
	for _, c := range s.Opts.DisabledControllers {
		controllers += ",-" + c
	}
	var qps, kcmScale []string
	if q := s.Opts.ControllerQPS; q > 0 {
		qps = []string{"--kube-api-qps=" + strconv.Itoa(q), "--kube-api-burst=" + strconv.Itoa(2*q)}
		// Mass deploys: more ReplicaSet and Deployment workers than the default 5.
		kcmScale = []string{"--concurrent-replicaset-syncs=20", "--concurrent-deployment-syncs=20"}
	}
	lease, grace := nodeLeaseSeconds, nodeGrace
	if s.Opts.Light {
		// Scale runs: 1,000 nodes renewing a 40 s lease every 10 s are 100 writes/s that
		// starve etcd on two cores; renew every minute instead.
		lease, grace = 4*nodeLeaseSeconds+80, "5m"
	}
	for _, c := range []struct {
		name, bin string
		args      []string
	}{
		{"kube-scheduler", sched, append([]string{"--kubeconfig", kc, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(p1)}, qps...)},
		{"kube-controller-manager", kcm, []string{"--kubeconfig", kc, "--leader-elect=false", "--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p2), controllers,
			"--use-service-account-credentials=false", "--node-monitor-grace-period=" + grace}},
		{"kwok", kwok, []string{"--kubeconfig", kc, "--manage-all-nodes=false", "--manage-nodes-with-label-selector=type=kwok",
			"--config", stages, "--server-address=127.0.0.1:" + strconv.Itoa(p3), "--node-ip=127.0.0.1",
			// Node leases keep the simulated nodes Ready: without them the controller-manager's
			// grace period runs out and every node flaps NotReady.
			"--node-lease-duration-seconds=" + strconv.Itoa(lease)}},
	} {
		if c.name == "kube-controller-manager" {
			c.args = append(append(c.args, qps...), kcmScale...)
		}
		p, err := harness.StartProc(filepath.Join(s.Opts.Dir, "logs"), c.name, c.bin, c.args...)
		if err != nil {
			return err
		}
		s.procs = append(s.procs, p)
	}
	return nil
}

// nodeLeaseSeconds is the kwok node lease duration; kwok renews at a quarter of it, well
// inside the controller-manager's 40 s grace period.
const nodeLeaseSeconds = 40

// nodeGrace is the controller-manager's --node-monitor-grace-period for nodeLeaseSeconds.
const nodeGrace = "40s"

// kwokStages writes kwok's stock stages with one addition: running containers get a
// containerd:// container ID (derived from the pod UID and container name), which the node
// agent needs to find their cgroups.
func kwokStages(dir string) (string, error) {
	src := filepath.Join(harness.BinDir(), "kwok-stages.yaml")
	b, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("reading %s (run make tools): %w", src, err)
	}
	const anchor = "      containerStatuses:\n      {{ range .spec.containers }}\n      - image: {{ .image | Quote }}\n"
	if !strings.Contains(string(b), anchor) {
		return "", errors.New("kwok pod-ready stage changed: cannot add container IDs")
	}
	out := strings.Replace(string(b), anchor, anchor+
		"        containerID: {{ printf \"containerd://%s-%s\" $.metadata.uid .name | Quote }}\n", 1)
	path := filepath.Join(dir, "kwok-stages.yaml")
	return path, os.WriteFile(path, []byte(out), 0o644)
}

func (s *Sandbox) startControl(ctx context.Context, kc string) error {
	port, _ := harness.FreePort()
	health, _ := harness.FreePort()
	if err := s.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}); err != nil {
		return err
	}
	if err := s.Client.Create(ctx, harness.WebhookConfiguration("ballast", fmt.Sprintf("https://127.0.0.1:%d%s", port, ballastv1.WebhookPath), operatorNS)); err != nil {
		return err
	}
	if err := s.Client.Create(ctx, evictionWebhook("ballast", fmt.Sprintf("https://127.0.0.1:%d%s", port, ballastv1.EvictionWebhookPath), operatorNS)); err != nil {
		return err
	}
	s.healthURL = fmt.Sprintf("http://127.0.0.1:%d/readyz", health)
	metrics, _ := harness.FreePort()
	s.MetricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)
	args := []string{"--kubeconfig", kc,
		"--leader-elect=false", "--operator-namespace", operatorNS, "--redis-url", s.Valkey.URL(),
		"--webhook-host", "127.0.0.1", "--webhook-port", strconv.Itoa(port), "--webhook-dns-names", "127.0.0.1",
		"--webhook-cert-path", filepath.Join(s.Opts.Dir, "webhook-certs"), "--webhook-config-name", "ballast",
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(health),
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(metrics), "--metrics-secure=false",
		"--log-format", "text", "--log-level", "debug"}
	if s.PrometheusURL != "" {
		args = append(args, "--history-prometheus-url", s.PrometheusURL, "--history-prometheus-step=1s", "--history-prometheus-rate-window=5s")
	}
	bin, args := s.Opts.ControlBin, append(args, s.Opts.ControlArgs...)
	if s.Opts.ControlMemoryLimit > 0 {
		cg, err := NewMemCgroup(fmt.Sprintf("ballast-control-%d", os.Getpid()), s.Opts.ControlMemoryLimit)
		if err != nil {
			return err
		}
		s.ControlCgroup = cg
		bin, args = cg.Wrap(bin, args)
	}
	p, err := harness.StartProc(filepath.Join(s.Opts.Dir, "logs"), "ballast-control", bin, args...)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	return harness.Poll(ctx, 60*time.Second, "ballast-control ready", func() error {
		if done, err := p.Exited(); done {
			return fmt.Errorf("ballast-control exited: %v (see %s)", err, p.Log)
		}
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
	})
}

func (s *Sandbox) startAgent(kc string, n *Node) error {
	health, _ := harness.FreePort()
	debug, _ := harness.FreePort()
	p, err := harness.StartProc(filepath.Join(s.Opts.Dir, "logs"), "ballast-node-"+n.Name, s.Opts.NodeBin, agentArgs(kc, n, s.Valkey.URL(), health, debug)...)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	s.agents[n.Name] = p
	return nil
}

func (s *Sandbox) nodesReady() error {
	for _, n := range s.Nodes {
		node := &corev1.Node{}
		if err := s.Client.Get(context.Background(), client.ObjectKey{Name: n.Name}, node); err != nil {
			return err
		}
		ready := false
		for _, c := range node.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			return fmt.Errorf("node %s not Ready", n.Name)
		}
	}
	return nil
}

// Stop tears everything down in reverse order.
func (s *Sandbox) Stop() {
	if s.cancel != nil {
		s.cancel()
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop(5 * time.Second)
	}
	if s.ControlCgroup != nil {
		_ = s.ControlCgroup.Remove()
	}
	s.stopPrometheus()
	for _, n := range s.Nodes {
		n.Close()
	}
	s.Valkey.Stop()
	s.Kube.Stop()
}

// Logs is the folder holding every component's log.
func (s *Sandbox) Logs() string { return filepath.Join(s.Opts.Dir, "logs") }

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}
