package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ballastk8s/ballast/test/harness"
)

const ctrdSock = "/run/containerd/containerd.sock"

// containerd 1.6 (Debian) CRI settings: the local pause image as the sandbox image (nothing
// is ever pulled), restrict_oom_score_adj because this VM lacks CAP_SYS_RESOURCE, the
// cgroupfs driver, Debian's runc and CNI plugins.
const containerdConfig = `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %q
        Root = %q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`

const cniConfig = `{"cniVersion": "0.4.0", "name": "node-tier", "plugins": [
 {"type": "bridge", "bridge": %q, "isGateway": true, "isDefaultGateway": true, "ipMasq": false,
  "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]]}},
 {"type": "loopback"}]}
`

// imagesDir returns the folder of the image archives: BALLAST_IMAGES (make images sets
// it), else a fresh build with hack/imagebuild into the node's folder.
func (n *Node) imagesDir(ctx context.Context) (string, error) {
	if d := os.Getenv("BALLAST_IMAGES"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "digests.txt")); err == nil {
			return d, nil
		}
	}
	out := filepath.Join(n.Dir, "images")
	cmd := exec.CommandContext(ctx, "go", "run", ".", "-out", out)
	cmd.Dir = filepath.Join(harness.RepoRoot(), "hack", "imagebuild")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the images (hack/imagebuild): %w\n%s", err, b)
	}
	return out, nil
}

func (n *Node) startRuntime(ctx context.Context) error {
	images, err := n.imagesDir(ctx)
	if err != nil {
		return err
	}
	digests, err := os.ReadFile(filepath.Join(images, "digests.txt"))
	if err != nil {
		return err
	}
	var archives []string
	for _, line := range strings.Split(strings.TrimSpace(string(digests)), "\n") {
		f := strings.Fields(line) // <ref> <digest> <archive>
		if len(f) != 3 {
			return fmt.Errorf("digests.txt: bad line %q", line)
		}
		n.Images[strings.TrimSuffix(f[2], ".tar")] = f[0]
		archives = append(archives, filepath.Join(images, f[2]))
	}
	if n.Images["pause"] == "" {
		return fmt.Errorf("no pause image in %s", images)
	}
	for _, m := range n.members {
		if err := n.startContainerd(ctx, m, archives); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}

// inNetns returns bin and args to run bin in m's network namespace (nsenter joins the
// network namespace only: mounts and PIDs stay the tier's), or unchanged for the one-node
// tier.
func (m *member) inNetns(bin string, args ...string) (string, []string) {
	if m.netns == "" {
		return bin, args
	}
	return "nsenter", append([]string{"--net=/run/netns/" + m.netns, "--", bin}, args...)
}

// procName is the log name of m's component (containerd, kubelet; -<node> when several).
func (m *member) procName(component string) string {
	if m.netns == "" {
		return component
	}
	return component + "-" + m.Name
}

func (n *Node) startContainerd(ctx context.Context, m *member, archives []string) error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return err
	}
	cni := filepath.Join(m.dir, "cni")
	if err := os.MkdirAll(cni, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cni, "10-node-tier.conflist"), fmt.Appendf(nil, cniConfig, m.bridge, m.ipamDir, m.PodCIDR), 0o644); err != nil {
		return err
	}
	cfg := filepath.Join(m.dir, "containerd.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, containerdConfig, filepath.Join(m.dir, "containerd"), m.state, m.sock,
		filepath.Join(m.dir, "containerd-opt"), n.Images["pause"], runc, filepath.Join(m.state, "runc"), cniBinDir, cni), 0o644); err != nil {
		return err
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return err
	}
	b, args := m.inNetns(bin, "--config", cfg)
	if m.ctrd, err = harness.StartProc(n.logs(), m.procName("containerd"), b, args...); err != nil {
		return err
	}
	if err := harness.Poll(ctx, 30*time.Second, "containerd serving", func() error {
		if err := m.ctrd.Alive(); err != nil {
			return err
		}
		_, err := run(ctx, "ctr", "-a", m.sock, "version")
		return err
	}); err != nil {
		return err
	}
	for _, a := range archives {
		if _, err := run(ctx, "ctr", "-a", m.sock, "-n", "k8s.io", "images", "import", a); err != nil {
			return fmt.Errorf("importing %s: %w", a, err)
		}
	}
	return nil
}

func (n *Node) startKubelet(ctx context.Context) error {
	for _, m := range n.members {
		if err := n.startMemberKubelet(ctx, m); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	n.kubelet = n.members[0].kubelet
	for _, m := range n.members {
		if err := n.waitReady(ctx, m); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}

func (n *Node) startMemberKubelet(ctx context.Context, m *member) error {
	pk := n.pki.path
	resolv := filepath.Join(m.dir, "resolv.conf")
	if err := os.WriteFile(resolv, nil, 0o644); err != nil {
		return err
	}
	// The multi-node tier's kubelets share the mount namespace: each keeps its pods' logs
	// apart (a kubelet's garbage collection removes log folders of pods it does not know),
	// and all but the first have a cgroup root of their own.
	var extra string
	if m.netns != "" {
		extra += fmt.Sprintf("podLogsDirectory: %s\n", m.podLogs)
	}
	if m.cgroupRoot != "" {
		if err := makeCgroupRoot(m.cgroupRoot); err != nil {
			return err
		}
		extra += fmt.Sprintf("cgroupRoot: %s\n", m.cgroupRoot)
	}
	cfg := filepath.Join(m.dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
address: %s
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true, cacheTTL: 10s}
  x509: {clientCAFile: %s}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 10s, cacheUnauthorizedTTL: 5s}
clusterDNS: [%s]
clusterDomain: cluster.local
resolvConf: %s
failSwapOn: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusUpdateFrequency: 2s
syncFrequency: 5s
serializeImagePulls: false
%s`, m.sock, m.IP, pk("kubelet-serving"+m.certName+".crt"), pk("kubelet-serving"+m.certName+".key"), pk("ca.crt"), dnsIP, resolv, extra), 0o644); err != nil {
		return err
	}
	bin, err := tool("kubelet")
	if err != nil {
		return err
	}
	b, args := m.inNetns(bin, "--config="+cfg, "--kubeconfig="+filepath.Join(m.dir, "kubelet.kubeconfig"),
		"--root-dir="+filepath.Join(m.dir, "kubelet"), "--cert-dir="+filepath.Join(m.dir, "kubelet-pki"),
		"--hostname-override="+m.Name, "--node-ip="+m.IP, "--v=1")
	if m.kubelet, err = harness.StartProc(n.logs(), m.procName("kubelet"), b, args...); err != nil {
		return err
	}
	n.procs = append(n.procs, m.kubelet)
	return nil
}

// waitReady waits until m's node is Ready and untainted.
func (n *Node) waitReady(ctx context.Context, m *member) error {
	return harness.Poll(ctx, 90*time.Second, "node Ready", func() error {
		if err := m.kubelet.Alive(); err != nil {
			return err
		}
		node, err := n.Clientset.CoreV1().Nodes().Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				for _, t := range node.Spec.Taints {
					if t.Effect == corev1.TaintEffectNoSchedule {
						return fmt.Errorf("node still tainted %s", t.Key)
					}
				}
				return nil
			}
		}
		return fmt.Errorf("node not Ready: %v", node.Status.Conditions)
	})
}

// deleteAllPods deletes every pod at once and waits until the kubelet has stopped them.
func (n *Node) deleteAllPods(ctx context.Context) {
	pods, err := n.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		_ = n.Clientset.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
	}
	// The API server drops a pod once the kubelet has stopped its containers; the sandboxes
	// the kubelet would garbage-collect later are killed by killContainers.
	_ = harness.Poll(ctx, 30*time.Second, "pods gone", func() error {
		left, err := n.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(left.Items) > 0 {
			return fmt.Errorf("%d pods left", len(left.Items))
		}
		return nil
	})
}

// killContainers kills and removes whatever task containerd still runs (a kubelet that
// died early leaves its pods).
func (m *member) killContainers(ctx context.Context) {
	if m.ctrd == nil || m.ctrd.Alive() != nil {
		return
	}
	out, err := run(ctx, "ctr", "-a", m.sock, "-n", "k8s.io", "tasks", "ls", "-q")
	if err != nil {
		return
	}
	for _, id := range strings.Fields(out) {
		_, _ = run(ctx, "ctr", "-a", m.sock, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id)
	}
	for _, id := range strings.Fields(out) {
		_ = harness.Poll(ctx, 5*time.Second, "task deleted", func() error {
			_, err := run(ctx, "ctr", "-a", m.sock, "-n", "k8s.io", "tasks", "rm", "-f", id)
			return err
		})
	}
}
