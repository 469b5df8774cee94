package sandbox

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	stats "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
)

// Node is one simulated node: a kwok Node object, a synthetic cgroup v2 tree (systemd
// driver) that the workload models drive, and a kubelet Summary stub.
type Node struct {
	Name       string
	CgroupRoot string
	Kubelet    *httptest.Server
	// Address is where the API server and metrics-server reach the stand-in (the Node's
	// InternalIP): a non-loopback address of this machine when it has one, since the API
	// server's node proxy refuses loopback addresses; else 127.0.0.1. The agent keeps
	// Kubelet.URL (loopback, the certificate it verifies).
	Address   string
	external  *http.Server
	TokenFile string
	CAFile    string

	c     client.Client
	start time.Time
	rng   *rand.Rand

	mu         sync.Mutex
	containers map[string]*simContainer // by container ID
	used       usage                    // sum of the last tick, for the chart
	truth      map[string]*AppTruth     // by namespace/app (truth.go)
	light      bool                     // no cgroup files (no agent reads them: the scale bench)
	ooms       []oomReport              // kills not yet in the pod's status
}

type oomReport struct {
	pod       client.ObjectKey
	container string
	at        time.Time
}

type simContainer struct {
	pod, ns, name, uid string
	model              model
	dir                string // relative to CgroupRoot
	started            time.Time
	usageUsec          float64
	peak               float64
	ooms               int
	limit              float64
	last               usage
	at                 time.Time // when last and usageUsec were taken
}

// Capacity of every simulated node.
var nodeCapacity = corev1.ResourceList{
	corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"),
	corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
}

// newNode creates the node and its kubelet stand-in (its noise seeded by seed). clientCAs
// are the CAs whose client certificates the stand-in accepts besides the bearer token (a
// real kubelet's --client-ca-file): metrics-server authenticates with its kubeconfig's
// certificate, the API server's node proxy with its kubelet client certificate.
func newNode(ctx context.Context, c client.Client, dir, name string, seed uint64, clientCAs ...string) (*Node, error) {
	n := &Node{Name: name, CgroupRoot: filepath.Join(dir, "nodes", name, "cgroup"), c: c, start: time.Now(),
		rng: rand.New(rand.NewPCG(uint64(len(name)), 7+seed)), containers: map[string]*simContainer{}}
	if err := os.MkdirAll(filepath.Join(n.CgroupRoot, "kubepods.slice"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(n.CgroupRoot, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
		return nil, err
	}
	// Kubelet Summary stub over TLS with a bearer token, like the real kubelet.
	n.TokenFile = filepath.Join(dir, "nodes", name, "token")
	if err := os.WriteFile(n.TokenFile, []byte("sandbox-token-"+name), 0o600); err != nil {
		return nil, err
	}
	n.Kubelet = httptest.NewUnstartedServer(http.HandlerFunc(n.serveKubelet))
	if len(clientCAs) > 0 {
		pool, err := certPool(clientCAs...)
		if err != nil {
			return nil, err
		}
		n.Kubelet.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	}
	n.Kubelet.StartTLS()
	n.Address = "127.0.0.1"
	port := n.Kubelet.Listener.Addr().(*net.TCPAddr).Port
	if ip := hostIP(); ip != "" {
		if l, err := net.Listen("tcp", net.JoinHostPort(ip, "0")); err == nil {
			n.external = &http.Server{Handler: n.Kubelet.Config.Handler, TLSConfig: n.Kubelet.TLS.Clone(), ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = n.external.ServeTLS(l, "", "") }()
			n.Address, port = ip, l.Addr().(*net.TCPAddr).Port
		}
	}
	n.CAFile = filepath.Join(dir, "nodes", name, "kubelet-ca.crt")
	if err := writeServerCA(n.Kubelet, n.CAFile); err != nil {
		return nil, err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		// The stand-in's address and port, where metrics-server finds a kubelet
		// (--kubelet-preferred-address-types=InternalIP, --kubelet-use-node-status-port).
		Status: corev1.NodeStatus{Capacity: nodeCapacity, Allocatable: nodeCapacity,
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.Address}, {Type: corev1.NodeHostName, Address: name}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}}}}
	if err := c.Create(ctx, node); err != nil {
		return nil, fmt.Errorf("creating node %s: %w", name, err)
	}
	return n, nil
}

// run drives the cgroup tree every tick until ctx ends.
func (n *Node) run(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n.step(ctx, now, now.Sub(last))
			last = now
		}
	}
}

func (n *Node) step(ctx context.Context, now time.Time, dt time.Duration) {
	pods := &corev1.PodList{}
	if err := n.c.List(ctx, pods, client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
		return
	}
	for i := range pods.Items {
		n.simulateResize(ctx, &pods.Items[i])
	}
	n.stepLocked(pods, now, dt)
	n.mu.Lock()
	pending := n.ooms
	n.ooms = nil
	n.mu.Unlock()
	for _, o := range pending {
		if !n.reportOOM(ctx, o.pod, o.container, o.at) {
			n.mu.Lock()
			n.ooms = append(n.ooms, o) // a conflict: again on the next tick
			n.mu.Unlock()
		}
	}
}

func (n *Node) stepLocked(pods *corev1.PodList, now time.Time, dt time.Duration) {
	seen := map[string]bool{}
	n.mu.Lock()
	defer n.mu.Unlock()
	var total usage
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			id, err := cgroup.ParseContainerID(cs.ContainerID)
			if err != nil {
				continue
			}
			seen[id.ID] = true
			sc := n.containers[id.ID]
			if sc == nil {
				if sc, err = n.newContainer(p, cs.Name, id); err != nil {
					continue
				}
				n.containers[id.ID] = sc
			}
			n.followLimit(p, sc)
			oom := n.advance(sc, now, dt)
			n.account(p, sc, dt, oom, now)
			if oom {
				n.ooms = append(n.ooms, oomReport{pod: client.ObjectKeyFromObject(p), container: cs.Name, at: now})
			}
			total.MilliCPU += sc.last.MilliCPU
			total.MemoryBytes += sc.last.MemoryBytes
		}
	}
	for id, sc := range n.containers {
		if !seen[id] {
			_ = os.RemoveAll(filepath.Join(n.CgroupRoot, filepath.Dir(sc.dir)))
			delete(n.containers, id)
		}
	}
	n.used = total
}

func (n *Node) newContainer(p *corev1.Pod, name string, id cgroup.ContainerID) (*simContainer, error) {
	qos := cgroup.QOSClass(p.Status.QOSClass)
	if qos == "" {
		qos = cgroup.Burstable
	}
	dirs, err := cgroup.ContainerDirCandidates(cgroup.DriverSystemd, string(p.UID), qos, id)
	if err != nil {
		return nil, err
	}
	sc := &simContainer{pod: p.Name, ns: p.Namespace, name: name, uid: string(p.UID), dir: dirs[0],
		model: modelFor(p.Labels[ModelLabel]), started: time.Now()}
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			if l, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				sc.limit = float64(l.Value())
			}
		}
	}
	if n.light {
		return sc, nil
	}
	abs := filepath.Join(n.CgroupRoot, sc.dir)
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	limit := "max\n"
	if sc.limit > 0 {
		limit = fmt.Sprintf("%d\n", int64(sc.limit))
	}
	_ = writeFile(abs, "memory.max", limit)
	_ = writeFile(abs, "cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	_ = writeFile(abs, "memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	for _, d := range []string{abs, filepath.Dir(abs)} {
		_ = writeFile(d, "memory.events.local", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")
		_ = writeFile(d, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")
	}
	return sc, nil
}

// simulateResize plays the kubelet's side of in-place resize, which kwok does not have
// (SIMULATED: no kubelet runs here). A Running pod's container statuses carry the spec's
// requests as allocatedResources and its requests and limits as the actual resources, and a
// new generation is observed at once, with no PodResize* condition: every resize completes
// immediately. Without these fields the API server refuses pods/resize on the node.
func (n *Node) simulateResize(ctx context.Context, p *corev1.Pod) {
	if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
		return
	}
	if defers(p) {
		n.deferResize(ctx, p)
		return
	}
	changed := p.Status.ObservedGeneration < p.Generation
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		for _, c := range p.Spec.Containers {
			if c.Name != cs.Name {
				continue
			}
			want := corev1.ResourceRequirements{Requests: c.Resources.Requests.DeepCopy(), Limits: c.Resources.Limits.DeepCopy()}
			if cs.Resources == nil || !equality.Semantic.DeepEqual(*cs.Resources, want) ||
				!equality.Semantic.DeepEqual(cs.AllocatedResources, c.Resources.Requests) {
				cs.Resources, cs.AllocatedResources, changed = &want, c.Resources.Requests.DeepCopy(), true
			}
		}
	}
	if !changed {
		return
	}
	p.Status.ObservedGeneration = p.Generation
	_ = n.c.Status().Update(ctx, p) // a conflict is retried on the next tick
}

// followLimit applies a resized memory limit to the container's cgroup (memory.max), as the
// kubelet's actuation would.
func (n *Node) followLimit(p *corev1.Pod, sc *simContainer) {
	for _, c := range p.Spec.Containers {
		if c.Name != sc.name {
			continue
		}
		limit := 0.0
		if l, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			limit = float64(l.Value())
		}
		if limit == sc.limit {
			return
		}
		sc.limit = limit
		v := "max\n"
		if limit > 0 {
			v = fmt.Sprintf("%d\n", int64(limit))
		}
		_ = writeFile(filepath.Join(n.CgroupRoot, sc.dir), "memory.max", v)
	}
}

// advance moves one container's counters forward by dt and rewrites its cgroup files.
func (n *Node) advance(sc *simContainer, now time.Time, dt time.Duration) bool {
	u, oom := sc.model(now.Sub(sc.started).Seconds(), n.rng, sc.limit)
	u.MilliCPU, u.MemoryBytes = clampPositive(u.MilliCPU), clampPositive(u.MemoryBytes)
	sc.last, sc.at = u, now
	sc.usageUsec += u.MilliCPU / 1000 * dt.Seconds() * 1e6
	sc.peak = max(sc.peak, u.MemoryBytes)
	if n.light {
		if oom {
			sc.ooms++
			sc.started, sc.peak = now, 0
		}
		return oom
	}
	abs := filepath.Join(n.CgroupRoot, sc.dir)
	inactive := 8 * mi
	_ = writeFile(abs, "cpu.stat", fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec %d\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
		int64(sc.usageUsec), int64(sc.usageUsec*0.8), int64(sc.usageUsec*0.2)))
	_ = writeFile(abs, "memory.current", fmt.Sprintf("%d\n", int64(u.MemoryBytes)+int64(inactive)))
	_ = writeFile(abs, "memory.stat", fmt.Sprintf("anon %d\nfile %d\nactive_file 0\ninactive_file %d\n", int64(u.MemoryBytes), inactive, inactive))
	_ = writeFile(abs, "memory.peak", fmt.Sprintf("%d\n", int64(sc.peak)+int64(inactive)))
	if oom {
		// The container's own limit was hit: oom and oom_kill in its memory.events.local.
		sc.ooms++
		ev := fmt.Sprintf("low 0\nhigh 0\nmax %d\noom %d\noom_kill %d\noom_group_kill 0\n", sc.ooms, sc.ooms, sc.ooms)
		// In place, as the kernel updates them: the agent watches these files with inotify.
		_ = os.WriteFile(filepath.Join(abs, "memory.events"), []byte(ev), 0o644)
		_ = os.WriteFile(filepath.Join(abs, "memory.events.local"), []byte(ev), 0o644)
		sc.started, sc.peak = now, 0
	}
	return oom
}

// serveKubelet answers the kubelet endpoints the stand-in has, for a caller with the node's
// bearer token or a client certificate of the API server's client CA.
func (n *Node) serveKubelet(w http.ResponseWriter, r *http.Request) {
	tok, _ := os.ReadFile(n.TokenFile)
	certOK := r.TLS != nil && len(r.TLS.VerifiedChains) > 0
	if !certOK && r.Header.Get("Authorization") != "Bearer "+strings.TrimSpace(string(tok)) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/stats/summary":
		n.serveSummary(w)
	case "/metrics/resource":
		n.serveResource(w)
	case "/metrics/cadvisor":
		n.serveCAdvisor(w)
	default:
		http.NotFound(w, r)
	}
}

// serveSummary answers GET /stats/summary with the containers' ephemeral storage.
func (n *Node) serveSummary(w http.ResponseWriter) {
	n.mu.Lock()
	byPod := map[string]*stats.PodStats{}
	now := metav1.Now()
	for _, sc := range n.containers {
		ps := byPod[sc.uid]
		if ps == nil {
			ps = &stats.PodStats{PodRef: stats.PodReference{Name: sc.pod, Namespace: sc.ns, UID: sc.uid}, StartTime: now}
			byPod[sc.uid] = ps
		}
		root, logs := uint64(sc.last.DiskBytes*0.8), uint64(sc.last.DiskBytes*0.2)
		nano, ws := uint64(sc.last.MilliCPU*1e6), uint64(sc.last.MemoryBytes)
		ps.Containers = append(ps.Containers, stats.ContainerStats{Name: sc.name, StartTime: now,
			CPU:    &stats.CPUStats{Time: now, UsageNanoCores: &nano},
			Memory: &stats.MemoryStats{Time: now, WorkingSetBytes: &ws},
			Rootfs: &stats.FsStats{Time: now, UsedBytes: &root}, Logs: &stats.FsStats{Time: now, UsedBytes: &logs}})
	}
	n.mu.Unlock()
	s := stats.Summary{Node: stats.NodeStats{NodeName: n.Name, StartTime: metav1.NewTime(n.start)}}
	for _, ps := range byPod {
		s.Pods = append(s.Pods, *ps)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}

// Used returns the summed usage of the node's containers at the last tick.
func (n *Node) Used() (milliCPU, memBytes float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.used.MilliCPU, n.used.MemoryBytes
}

// Close stops the stand-in's listeners.
func (n *Node) Close() {
	n.Kubelet.Close()
	if n.external != nil {
		_ = n.external.Close()
	}
}

// hostIP is the first IPv4 address of an up, non-loopback interface, or "".
func hostIP() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLinkLocalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return ""
}

func writeFile(dir, name, content string) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

func writeServerCA(s *httptest.Server, path string) error {
	cert := s.TLS.Certificates[0]
	return writePEMCert(path, cert)
}

func writePEMCert(path string, cert tls.Certificate) error {
	var b strings.Builder
	for _, der := range cert.Certificate {
		b.WriteString(pemCert(der))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func pemCert(der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
