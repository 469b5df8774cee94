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

	pki      *pki
	procs    []*harness.Proc // in start order; stopped in reverse
	kubelet  *harness.Proc
	ctrd     *harness.Proc
	proxy    *svcProxy
	stopOnce sync.Once
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
func Start(ctx context.Context, dir string) (*Node, error) {
	n := &Node{Dir: dir, Images: map[string]string{}}
	p, err := newPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	n.pki = p
	if err := n.issueCertificates(); err != nil {
		return n, err
	}
	n.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	server := "https://" + net.JoinHostPort(NodeIP, "6443")
	if err := p.kubeconfig(n.Kubeconfig, server, "admin"); err != nil {
		return n, err
	}
	if err := p.kubeconfig(filepath.Join(dir, "kubelet.kubeconfig"), server, "kubelet-client"); err != nil {
		return n, err
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
	node := net.ParseIP(NodeIP)
	for _, c := range []struct {
		name, cn string
		orgs     []string
		ips      []net.IP
		dns      []string
	}{
		{"apiserver", "kube-apiserver", nil, []net.IP{node, net.ParseIP(apiSvcIP), net.ParseIP("127.0.0.1")},
			[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}},
		{"admin", "node-tier-admin", []string{"system:masters"}, nil, nil},
		{"kubelet-client", "system:node:" + NodeName, []string{"system:nodes"}, nil, nil},
		{"kubelet-serving", "system:node:" + NodeName, []string{"system:nodes"}, []net.IP{node}, []string{NodeName}},
	} {
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
		"--advertise-address="+NodeIP,
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
		_, _ = run(ctx, "cp", "-r", "/var/log/pods", filepath.Join(n.Dir, "pod-logs"))
		if n.Clientset != nil && n.kubelet != nil && n.kubelet.Alive() == nil {
			n.deleteAllPods(ctx)
		}
		n.kubelet.Stop(10 * time.Second)
		n.killContainers(ctx)
		n.ctrd.Stop(10 * time.Second)
		n.proxy.stop()
		for i := len(n.procs) - 1; i >= 0; i-- {
			n.procs[i].Stop(10 * time.Second)
		}
		if err := removeKubepods(10 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "node tier: removing kubepods cgroups:", err)
		}
	})
}
