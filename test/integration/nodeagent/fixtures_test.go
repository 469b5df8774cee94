package nodeagent

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/test/cgroupfixture"
)

const mi = 1 << 20

// identityLabel is the one identity label of the tests' BallastConfig (ensureCluster).
const identityLabel = "app.kubernetes.io/name"

// profileName is the WorkloadProfile the control plane binds pods labelled
// identityLabel=label to under ClusterResourcePolicy "fast" (ensureCluster), which covers
// every pod: the name their profile-ref must carry for the agent to use it. Tests name a
// profile by its label value; createProfile and podSpec translate.
func profileName(label string) string {
	ids := []string{identityLabel}
	tuple, sel := identity.Tuple(ids, map[string]string{identityLabel: label})
	return identity.ProfileName(ids, tuple, sel, identity.Discriminator(ballastv1.KindClusterResourcePolicy, "", "fast"))
}

// podSpec describes a test pod: long-running containers, native sidecars, one
// run-to-completion init container and an optional emptyDir.
type podSpec struct {
	ns, name, node  string
	profile, policy string
	label           string // app.kubernetes.io/name; default profile, else "web"

	containers          []string
	sidecars            []string
	initContainer       string
	emptyDir            string
	ids                 map[string]string // container name → bare container ID
	uid                 string
	qos                 string
	withoutModeLabel    bool
	withoutContainerIDs bool
}

func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// create creates the pod in the API server bound to its node, then sets its status the way
// the kubelet would: Running, Burstable, a container ID per running container.
func (ps *podSpec) create(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	ps.qos = string(corev1.PodQOSBurstable)
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
	label := cmp.Or(ps.label, ps.profile, "web")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ps.ns, Name: ps.name,
		Labels: map[string]string{identityLabel: label}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: ps.node}}
	if !ps.withoutModeLabel {
		pod.Labels[ballastv1.ModeLabel] = ballastv1.ModeMeasure
	}
	if ps.profile != "" {
		pod.Annotations[ballastv1.ProfileRefAnnotation] = profileName(ps.profile)
	}
	if ps.policy != "" {
		pod.Annotations[ballastv1.PolicyRefAnnotation] = ps.policy
	}
	for _, c := range ps.containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "app", Resources: res})
	}
	if ps.initContainer != "" {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: ps.initContainer, Image: "app"})
	}
	for _, c := range ps.sidecars {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: c, Image: "app",
			RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: res})
	}
	if ps.emptyDir != "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: ps.emptyDir,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if err := srv.Kube.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	ps.uid = string(pod.UID)
	ps.ids = map[string]string{}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	status := func(name string, state corev1.ContainerState) corev1.ContainerStatus {
		id := randomID()
		ps.ids[name] = id
		s := corev1.ContainerStatus{Name: name, Image: "app", ImageID: "app", Ready: true, State: state}
		if !ps.withoutContainerIDs {
			s.ContainerID = "containerd://" + id
		}
		return s
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable}
	for _, c := range ps.containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, status(c, running))
	}
	if ps.initContainer != "" {
		st := status(ps.initContainer, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}})
		st.Ready = false
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, st)
	}
	for _, c := range ps.sidecars {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, status(c, running))
	}
	if err := srv.Kube.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

// annotate sets (or with value "" removes) a pod annotation.
func (ps *podSpec) annotate(t testing.TB, key, value string) {
	t.Helper()
	var v any = value
	if value == "" {
		v = nil
	}
	ps.patch(t, map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
}

// patch applies a JSON merge patch to the pod.
func (ps *podSpec) patch(t testing.TB, p map[string]any) {
	t.Helper()
	b, _ := json.Marshal(p)
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ps.ns, Name: ps.name}}
	if err := srv.Kube.Client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, b)); err != nil {
		t.Fatal(err)
	}
}

// delete removes the pod at once (no kubelet runs to finish a graceful deletion).
func (ps *podSpec) delete(t testing.TB) {
	t.Helper()
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ps.ns, Name: ps.name}}
	if err := srv.Kube.Client.Delete(context.Background(), obj, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// sim keeps a synthetic cgroup tree moving: every container's cpu counter grows at its
// rate in wall-clock time, rewritten every 20 ms; memory values stay as last set.
type sim struct {
	tree  *cgroupfixture.Tree
	mu    sync.Mutex
	ctrs  map[string]*simCtr // by container ID
	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

type simCtr struct {
	podUID, qos, id string
	milli           float64
	v               cgroupfixture.Values
}

func newSim(t testing.TB) *sim {
	t.Helper()
	tree, err := cgroupfixture.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{tree: tree, ctrs: map[string]*simCtr{}, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	t.Cleanup(func() { close(s.stop); <-s.done })
	return s
}

// addPod creates the cgroups of a pod's running containers. values maps container name to
// its cpu rate in millicores and memory values.
func (s *sim) addPod(t testing.TB, ps *podSpec, podMax uint64, values map[string]simCtr) {
	t.Helper()
	if err := s.tree.AddPod(ps.uid, ps.qos, podMax); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, v := range values {
		id := ps.ids[name]
		c := &simCtr{podUID: ps.uid, qos: ps.qos, id: id, milli: v.milli, v: v.v}
		if err := s.tree.AddContainer(ps.uid, ps.qos, id, c.v); err != nil {
			t.Fatal(err)
		}
		s.ctrs[id] = c
	}
}

// set changes a container's memory values (the cpu counter keeps its own pace).
func (s *sim) set(id string, f func(*cgroupfixture.Values)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.ctrs[id].v)
}

func (s *sim) run() {
	defer close(s.done)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		elapsed := time.Since(s.start)
		s.mu.Lock()
		for _, c := range s.ctrs {
			c.v.UsageUsec = uint64(c.milli * float64(elapsed.Microseconds()) / 1000)
			_ = s.tree.Set(c.podUID, c.qos, c.id, c.v)
		}
		s.mu.Unlock()
	}
}

// kubeletStub serves /stats/summary over HTTPS for the pods it is told about, and only to
// callers presenting its token.
type kubeletStub struct {
	srv               *httptest.Server
	caFile, tokenFile string
	token             string
	start             time.Time // whole second: the refresh clock of pods with a refresh period
	mu                sync.Mutex
	pods              map[string]*stubPod
	requests          int
	// configz, when set, is served as the body of GET /configz (else 404, like a kubelet
	// that denies it).
	configz string
}

type stubPod struct {
	ns, name   string
	containers map[string][2]uint64 // rootfs, logs
	volumes    map[string]uint64
	// refresh > 0: the pod's stats are refreshed every refresh since the stub started, as
	// a kubelet's housekeeping does (their timestamps say so), and each refresh adds 1 MiB
	// to every container's rootfs; 0: fresh stats on every request.
	refresh time.Duration
}

func newKubeletStub(t testing.TB) *kubeletStub {
	t.Helper()
	k := &kubeletStub{pods: map[string]*stubPod{}, token: randomID(), start: time.Now().Truncate(time.Second)}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	dir := t.TempDir()
	k.caFile, k.tokenFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: k.srv.Certificate().Raw})
	if err := os.WriteFile(k.caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(k.tokenFile, []byte(k.token), 0o600); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *kubeletStub) flags() []string {
	return []string{"--kubelet-url", k.srv.URL, "--kubelet-ca-file", k.caFile, "--kubelet-token-file", k.tokenFile,
		"--kubelet-min-interval", "1s"}
}

func (k *kubeletStub) add(ps *podSpec, containers map[string][2]uint64, volumes map[string]uint64) {
	k.addRefreshed(ps, containers, volumes, 0)
}

// addRefreshed serves a pod whose stats the kubelet refreshes every refresh (see stubPod).
func (k *kubeletStub) addRefreshed(ps *podSpec, containers map[string][2]uint64, volumes map[string]uint64, refresh time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods[ps.uid] = &stubPod{ns: ps.ns, name: ps.name, containers: containers, volumes: volumes, refresh: refresh}
}

// served returns how many Summary requests were answered.
func (k *kubeletStub) served() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.requests
}

func (k *kubeletStub) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/configz" {
		k.mu.Lock()
		body := k.configz
		k.mu.Unlock()
		if body == "" || r.Header.Get("Authorization") != "Bearer "+k.token {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
		return
	}
	if r.URL.Path != "/stats/summary" {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+k.token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.requests++
	s := statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: "stub", StartTime: metav1.Now()}}
	for uid, p := range k.pods {
		now, grown := metav1.Now(), uint64(0)
		if p.refresh > 0 {
			n := time.Since(k.start) / p.refresh
			now, grown = metav1.NewTime(k.start.Add(n*p.refresh)), uint64(n)*mi
		}
		ps := statsv1alpha1.PodStats{PodRef: statsv1alpha1.PodReference{Name: p.name, Namespace: p.ns, UID: uid}, StartTime: now}
		for name, fs := range p.containers {
			ps.Containers = append(ps.Containers, statsv1alpha1.ContainerStats{Name: name, StartTime: now,
				CPU:    &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: ptr.To[uint64](1e8)},
				Memory: &statsv1alpha1.MemoryStats{Time: now, WorkingSetBytes: ptr.To[uint64](1)},
				Rootfs: &statsv1alpha1.FsStats{Time: now, UsedBytes: ptr.To(fs[0] + grown)},
				Logs:   &statsv1alpha1.FsStats{Time: now, UsedBytes: ptr.To(fs[1])}})
		}
		for name, used := range p.volumes {
			ps.VolumeStats = append(ps.VolumeStats, statsv1alpha1.VolumeStats{Name: name,
				FsStats: statsv1alpha1.FsStats{Time: now, UsedBytes: ptr.To(used)}})
		}
		s.Pods = append(s.Pods, ps)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}
