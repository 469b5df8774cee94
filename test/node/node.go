package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/test/harness"
)

// Node is the running one-node cluster.
type Node struct {
	Dir        string
	Kubeconfig string // admin (system:masters) kubeconfig
	Config     *rest.Config
	Client     client.Client
	Clientset  kubernetes.Interface
	// Images maps an image's short name (ballast-control, valkey, ...) to the reference it
	// was imported under, as a pod spec names it.
	Images  map[string]string
	Timings Timings

	// Nodes lists the kubelet nodes by name, in start order (NodeName alone for the
	// one-node tier; node-a, node-b … with Options.Nodes ≥ 2).
	Nodes []string

	pki      *pki
	apiIP    string // where the API server advertises itself and kubelets reach it
	members  []*member
	procs    []*harness.Proc // in start order; stopped in reverse
	kubelet  *harness.Proc   // the first node's (footprint reads its PID)
	proxy    *svcProxy
	stopOnce sync.Once
}

// Options shape the cluster Start brings up.
type Options struct {
	// Nodes is the number of kubelet nodes. 0 or 1 is the one-node tier: the node's
	// containerd and kubelet share the tier's network namespace with the control plane.
	// 2 or more is the multi-node tier: each node's containerd and kubelet run in a
	// network namespace of their own (multinode.go), joined to the control plane's by a
	// bridge.
	Nodes int
}

// member is one kubelet node: its addresses, where its containerd keeps its state, and
// its processes.
type member struct {
	Name, IP, PodCIDR string
	netns             string // named network namespace ("" = the tier's own)
	cgroupRoot        string // the kubelet's cgroupRoot ("" = the hierarchy root: kubepods at the top)
	bridge, ipamDir   string // the CNI bridge's name and host-local's data dir
	sock, state       string // containerd's socket and state dir
	podLogs           string // the kubelet's podLogsDirectory
	dir               string // its files (configs, containerd root, kubelet root-dir)
	certName          string // prefix of its kubelet-client / kubelet-serving certificates
	kubelet, ctrd     *harness.Proc
}

// members returns the nodes opts asks for. The one-node tier's single member keeps the
// paths and names it always had.
func members(dir string, opts Options) []*member {
	if opts.Nodes <= 1 {
		return []*member{{Name: NodeName, IP: NodeIP, PodCIDR: podCIDR, bridge: "ballast0", ipamDir: "/run/cni-ipam",
			sock: ctrdSock, state: "/run/containerd", podLogs: "/var/log/pods", dir: dir, certName: ""}}
	}
	var out []*member
	for i := 0; i < opts.Nodes; i++ {
		name := fmt.Sprintf("node-%c", 'a'+i)
		m := &member{Name: name, IP: fmt.Sprintf("10.200.0.%d", i+1), PodCIDR: fmt.Sprintf("10.244.%d.0/24", i),
			netns: name, bridge: "cbr-" + name, ipamDir: "/run/cni-ipam-" + name,
			sock: "/run/containerd-" + name + "/containerd.sock", state: "/run/containerd-" + name,
			podLogs: "/var/log/pods-" + name, dir: filepath.Join(dir, name), certName: "-" + name}
		if i > 0 {
			// Every kubelet's pods live under <cgroupRoot>/kubepods; only one can have the
			// hierarchy root. The node agent finds pods under /kubepods only (partial:
			// docs/real-node.md "Two-node tier").
			m.cgroupRoot = "/" + cgroupRootPrefix + name
		}
		out = append(out, m)
	}
	return out
}

// Timings are measured while the tier runs (docs/benchmarks.md).
type Timings struct {
	Started time.Duration // namespace → node Ready with images imported
}

func tool(name string) (string, error) { return harness.Tool(name) }

// Start brings the node up in dir: PKI, etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, the service stand-ins, containerd with the images imported, and the
// kubelet; it returns once the node is Ready. On error the returned Node (if any) must
// still be stopped.
func Start(ctx context.Context, dir string) (*Node, error) { return StartWith(ctx, dir, Options{}) }

// StartWith is Start with opts (the number of nodes).
func StartWith(ctx context.Context, dir string, opts Options) (*Node, error) {
	n := &Node{Dir: dir, Images: map[string]string{}, members: members(dir, opts), apiIP: NodeIP}
	if len(n.members) > 1 {
		n.apiIP = gatewayIP
	}
	for _, m := range n.members {
		n.Nodes = append(n.Nodes, m.Name)
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return nil, err
		}
	}
	p, err := newPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	n.pki = p
	if err := n.issueCertificates(); err != nil {
		return n, err
	}
	n.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	server := "https://" + net.JoinHostPort(n.apiIP, "6443")
	if err := p.kubeconfig(n.Kubeconfig, server, "admin"); err != nil {
		return n, err
	}
	for _, m := range n.members {
		if err := p.kubeconfig(filepath.Join(m.dir, "kubelet.kubeconfig"), server, "kubelet-client"+m.certName); err != nil {
			return n, err
		}
	}
	if err := n.startControlPlane(ctx); err != nil {
		return n, err
	}
	if err := n.startProxy(ctx); err != nil {
		return n, err
	}
	if err := n.startRuntime(ctx); err != nil {
		return n, err
	}
	if err := n.startKubelet(ctx); err != nil {
		return n, err
	}
	return n, nil
}

func (n *Node) issueCertificates() error {
	type cert struct {
		name, cn string
		orgs     []string
		ips      []net.IP
		dns      []string
	}
	certs := []cert{
		{"apiserver", "kube-apiserver", nil, []net.IP{net.ParseIP(n.apiIP), net.ParseIP(apiSvcIP), net.ParseIP("127.0.0.1")},
			[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}},
		{"admin", "node-tier-admin", []string{"system:masters"}, nil, nil},
	}
	for _, m := range n.members {
		ip := net.ParseIP(m.IP)
		certs = append(certs,
			cert{"kubelet-client" + m.certName, "system:node:" + m.Name, []string{"system:nodes"}, nil, nil},
			cert{"kubelet-serving" + m.certName, "system:node:" + m.Name, []string{"system:nodes"}, []net.IP{ip}, []string{m.Name}})
	}
	for _, c := range certs {
		if err := n.pki.issue(c.name, c.cn, c.orgs, c.ips, c.dns); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) logs() string { return filepath.Join(n.Dir, "logs") }

func (n *Node) start(name string, args ...string) (*harness.Proc, error) {
	bin, err := tool(name)
	if err != nil {
		return nil, err
	}
	p, err := harness.StartProc(n.logs(), name, bin, args...)
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, p)
	return p, nil
}

const featureGates = "InPlacePodVerticalScalingSchedulerPreemption=true"

func (n *Node) startControlPlane(ctx context.Context) error {
	pk := n.pki.path
	etcd, err := n.start("etcd", "--data-dir", filepath.Join(n.Dir, "etcd"), "--unsafe-no-fsync",
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "default=http://127.0.0.1:2380", "--log-level", "warn")
	if err != nil {
		return err
	}
	api, err := n.start("kube-apiserver",
		"--etcd-servers=http://127.0.0.1:2379", "--bind-address=0.0.0.0", "--secure-port=6443",
		"--advertise-address="+n.apiIP,
		"--tls-cert-file="+pk("apiserver.crt"), "--tls-private-key-file="+pk("apiserver.key"),
		"--client-ca-file="+pk("ca.crt"),
		"--kubelet-client-certificate="+pk("admin.crt"), "--kubelet-client-key="+pk("admin.key"),
		"--kubelet-certificate-authority="+pk("ca.crt"), "--kubelet-preferred-address-types=InternalIP",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pk("sa.pub"), "--service-account-signing-key-file="+pk("sa.key"),
		"--service-cluster-ip-range="+serviceNet, "--authorization-mode=Node,RBAC",
		"--feature-gates="+featureGates, "--allow-privileged=true", "--profiling=false", "--v=1")
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", n.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	n.Config = cfg
	if n.Clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if err := harness.Poll(ctx, 60*time.Second, "kube-apiserver ready", func() error {
		if err := errors.Join(etcd.Alive(), api.Alive()); err != nil {
			return err
		}
		_, err := n.Clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return err
	}
	if n.Client, err = client.New(cfg, client.Options{Scheme: harness.Scheme()}); err != nil {
		return err
	}
	if _, err := n.start("kube-controller-manager", "--kubeconfig="+n.Kubeconfig,
		"--authentication-kubeconfig="+n.Kubeconfig, "--authorization-kubeconfig="+n.Kubeconfig,
		"--bind-address=127.0.0.1", "--leader-elect=false", "--use-service-account-credentials=false",
		"--service-account-private-key-file="+pk("sa.key"), "--root-ca-file="+pk("ca.crt"),
		"--controllers=*,-csrsigning", "--service-cluster-ip-range="+serviceNet,
		"--node-monitor-period=2s", "--feature-gates="+featureGates, "--v=1"); err != nil {
		return err
	}
	if _, err := n.start("kube-scheduler", "--kubeconfig="+n.Kubeconfig,
		"--authentication-kubeconfig="+n.Kubeconfig, "--authorization-kubeconfig="+n.Kubeconfig,
		"--bind-address=127.0.0.1", "--leader-elect=false", "--feature-gates="+featureGates, "--v=1"); err != nil {
		return err
	}
	return nil
}

// Stop tears the node down: every pod, then the kubelet, then the containers left in
// containerd and containerd itself, then the control plane; last the kubepods cgroups.
// It is safe to call more than once.
func (n *Node) Stop() {
	n.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// Keep the pods' logs (the tmpfs /var/log vanishes with the namespace).
		alive := false
		for _, m := range n.members {
			_, _ = run(ctx, "cp", "-r", m.podLogs, filepath.Join(m.dir, "pod-logs"))
			alive = alive || (m.kubelet != nil && m.kubelet.Alive() == nil)
		}
		if n.Clientset != nil && alive {
			n.deleteAllPods(ctx)
		}
		for _, m := range n.members {
			m.kubelet.Stop(10 * time.Second)
		}
		for _, m := range n.members {
			// Each node's containers get their own time: the pods' deletion above may have
			// used up ctx.
			kctx, kcancel := context.WithTimeout(context.Background(), 30*time.Second)
			m.killContainers(kctx)
			kcancel()
			m.ctrd.Stop(10 * time.Second)
		}
		n.proxy.stop()
		for i := len(n.procs) - 1; i >= 0; i-- {
			n.procs[i].Stop(10 * time.Second)
		}
		if err := removeKubepods(10 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "node tier: removing kubepods cgroups:", err)
		}
	})
}
