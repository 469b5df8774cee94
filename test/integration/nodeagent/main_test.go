// Package nodeagent runs the real ballast-node binary against a real kube-apiserver and a
// real Valkey, with a synthetic cgroup v2 tree whose counters the tests advance and a
// kubelet HTTPS stub serving the Summary API, and checks what reaches the store.
package nodeagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

var srv *harness.Servers

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper() // the test binary re-executed as a workload (ebpf_test.go)
		return
	}
	harness.Logger()
	// The API server reaches agent pods (pods/proxy, nodeview_test.go) through egress.
	dir, err := os.MkdirTemp("", "ballast-egress-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	proxy, egressConfig, err := startEgressProxy(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "egress proxy:", err)
		os.Exit(1)
	}
	_ = proxy // serves until the process exits (harness.Main exits; the kernel closes it)
	harness.Main(m, harness.Need{Kube: true, Valkey: true,
		KubeOptions: harness.KubeOptions{APIServerFlags: map[string]string{"egress-selector-config-file": egressConfig}}}, &srv)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binary builds cmd/ballast-node once per test binary run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "ballast-node-bin-"); buildErr != nil {
			return
		}
		args := []string{"build", "-o", filepath.Join(buildDir, "ballast-node")}
		if os.Getenv("BALLAST_TEST_RACE") != "" {
			args = append(args, "-race") // a data race the agent reports fails the test (startAgent)
		}
		cmd := exec.Command("go", append(args, "./cmd/ballast-node")...)
		cmd.Dir = harness.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/ballast-node: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "ballast-node")
}

// agent is one running ballast-node process.
type agent struct {
	t       testing.TB
	cmd     *exec.Cmd
	logPath string
	debug   string // base URL of the debug endpoint
	metrics string
	health  string
	token   string // bearer token for the debug endpoint, "" with --debug-auth=false
	done    chan struct{}
}

// startAgent runs the binary for node with extra flags; it stops when the test ends.
func startAgent(t testing.TB, node, cgroupRoot string, extra ...string) *agent {
	t.Helper()
	return startAgentWrapped(t, nil, node, cgroupRoot, extra...)
}

// startAgentWrapped runs the binary through wrap (a command that execs its arguments: setpriv,
// unshare), for tests of the agent's privileges.
func startAgentWrapped(t testing.TB, wrap []string, node, cgroupRoot string, extra ...string) *agent {
	t.Helper()
	bin := binary(t)
	ports := make([]int, 3)
	for i := range ports {
		p, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	a := &agent{t: t, logPath: filepath.Join(t.TempDir(), "agent.log"), done: make(chan struct{}),
		debug:   fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1]),
		health:  fmt.Sprintf("http://127.0.0.1:%d", ports[2])}
	args := append([]string{
		"--kubeconfig", srv.Kube.Kubeconfig, "--node-name", node, "--redis-url", srv.Valkey.URL(),
		"--cgroup-root", cgroupRoot, "--cgroup-driver", "cgroupfs",
		"--debug-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"--flush-interval", "1s", "--log-format", "text", "--log-level", "debug",
	}, extra...)
	logf, err := os.Create(a.logPath)
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append(append([]string{}, wrap...), bin), args...)
	a.cmd = exec.Command(argv[0], argv[1:]...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	a.cmd.Env = append(os.Environ(), "NODE_IP=", "BALLAST_KUBELET_URL=")
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); logf.Close(); close(a.done) }()
	t.Cleanup(func() {
		a.stop()
		if b, _ := os.ReadFile(a.logPath); strings.Contains(string(b), "WARNING: DATA RACE") {
			t.Errorf("ballast-node reported a data race")
		}
		if t.Failed() || os.Getenv("BALLAST_TEST_AGENT_LOGS") != "" {
			b, _ := os.ReadFile(a.logPath)
			t.Logf("ballast-node log (%s):\n%s", node, tail(string(b), 150))
		}
	})
	a.waitReady()
	return a
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

func (a *agent) stop() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(15 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// exited reports whether the process has ended (a crash, in these tests).
func (a *agent) exited() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

func (a *agent) waitReady() {
	a.t.Helper()
	eventually(a.t, 60*time.Second, "agent /readyz", func() error {
		if a.exited() {
			b, _ := os.ReadFile(a.logPath)
			a.t.Fatalf("ballast-node exited at start:\n%s", tail(string(b), 60))
		}
		resp, err := http.Get(a.health + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

// report reads the debug endpoint as JSON.
func (a *agent) report() (debug.Report, error) {
	req, _ := http.NewRequest(http.MethodGet, a.debug+debug.Path, nil)
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return debug.Report{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return debug.Report{}, fmt.Errorf("debug endpoint: %d %s", resp.StatusCode, b)
	}
	var r debug.Report
	return r, json.NewDecoder(resp.Body).Decode(&r)
}

// metric returns the sum of every sample of a metric family whose labels contain match
// (e.g. `reason="buffer_full"`).
func (a *agent) metric(name, match string) (float64, error) {
	resp, err := http.Get(a.metrics)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || !(strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{")) {
			continue
		}
		if match != "" && !strings.Contains(line, match) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, sc.Err()
}

// eventually is harness.Eventually.
var eventually = harness.Eventually

// newHash returns a fresh measurementHash (16 lowercase hex digits).
func newHash() string { return fmt.Sprintf("%016x", rand.Uint64()) }

// newName returns a DNS-safe unique name.
func newName(prefix string) string { return fmt.Sprintf("%s-%06x", prefix, rand.Uint32()&0xffffff) }

// ensureCluster creates the cluster-wide configuration every test shares: BallastConfig, a
// 1s MetricsSource and a ClusterResourcePolicy "fast" naming it.
func ensureCluster(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{
		&ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
			Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{identityLabel}}},
		&ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "fast"},
			Spec: ballastv1.MetricsSourceSpec{Type: ballastv1.SourceTypeKubernetesMetrics, Config: ballastv1.MetricsSourceConfig{PollInterval: "1s"}}},
		&ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Spec: ballastv1.ResourcePolicySpec{
			Metrics: []ballastv1.MetricSpec{{Resource: "cpu", Field: "request", Source: "fast", Aggregation: "p95"},
				{Resource: "memory", Field: "request", Source: "fast", Aggregation: "max"}}}},
	} {
		if err := srv.Kube.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// createProfile creates a WorkloadProfile with status.measurementHash set, as the control
// plane would.
// name is the profile's label value (profileName).
func createProfile(t testing.TB, name, hash string) {
	t.Helper()
	ctx := context.Background()
	wp := &ballastv1.WorkloadProfile{ObjectMeta: metav1.ObjectMeta{Name: profileName(name)}}
	if err := srv.Kube.Client.Create(ctx, wp); err != nil {
		t.Fatal(err)
	}
	wp.Status.MeasurementHash = hash
	wp.Status.State = ballastv1.StateAccruing
	if err := srv.Kube.Client.Status().Update(ctx, wp); err != nil {
		t.Fatal(err)
	}
}

// storeReader opens a store reader with the layout the agent uses.
func storeReader(t testing.TB) *store.Reader {
	t.Helper()
	c, err := store.Open(srv.Valkey.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	r, err := store.NewReader(c, series.DefaultLayout(ballastv1.DefaultRetentionWindow))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// read returns the histograms of a profile's series, keyed by token
// ("<container>/<resource>/<signal>").
func read(r *store.Reader, hash string) (map[string]*series.Histogram, error) {
	hs, err := r.Read(context.Background(), hash, time.Now().Add(time.Minute))
	if err != nil {
		return nil, err
	}
	out := make(map[string]*series.Histogram, len(hs))
	for id, h := range hs {
		out[id.Token()] = h
	}
	return out, nil
}
