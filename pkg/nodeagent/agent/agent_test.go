package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ballastk8s/ballast/pkg/cli"
	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
)

func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		mutate func(*Options)
		want   string // substring of the error, "" for valid
	}{
		"defaults with a node name":      {func(o *Options) {}, ""},
		"node name required":             {func(o *Options) { o.NodeName = "" }, "--node-name"},
		"driver enum":                    {func(o *Options) { o.CgroupDriver = "docker" }, "--cgroup-driver"},
		"kubelet cgroup root":            {func(o *Options) { o.KubeletCgroupRoot = "/custom" }, ""},
		"kubelet cgroup root systemd":    {func(o *Options) { o.KubeletCgroupRoot = "/a.slice/a-b.slice" }, ""},
		"kubelet cgroup root traversal":  {func(o *Options) { o.KubeletCgroupRoot = "/../etc" }, "--kubelet-cgroup-root"},
		"positive intervals":             {func(o *Options) { o.FlushInterval = 0 }, "--flush-interval"},
		"bounded buffer":                 {func(o *Options) { o.BufferMaxWindows = 0 }, "--buffer-max-windows"},
		"cert and key together":          {func(o *Options) { o.DebugTLSCertFile = "c" }, "go together"},
		"no auth on loopback is allowed": {func(o *Options) { o.DebugAuth = false }, ""},
		"no auth beyond loopback is refused": {func(o *Options) {
			o.DebugAuth, o.DebugBindAddress = false, ":8082"
		}, "--debug-auth=false"},
		"debug endpoint disabled": {func(o *Options) { o.DebugAuth, o.DebugBindAddress = false, "0" }, ""},
		"pods/proxy listener":     {func(o *Options) { o.DebugProxyBindAddress = ":8083" }, ""},
		"pods/proxy listener with auth off elsewhere": {func(o *Options) {
			o.DebugAuth, o.DebugProxyBindAddress = false, ":8083"
		}, ""},
		"pods/proxy listener address":             {func(o *Options) { o.DebugProxyBindAddress = "8083" }, "--debug-proxy-bind-address"},
		"debug service account":                   {func(o *Options) { o.DebugServiceAccount = "ballast-system/r-ballast-debug" }, ""},
		"debug service account needs a namespace": {func(o *Options) { o.DebugServiceAccount = "ballast-debug" }, "--debug-service-account"},
		"debug service account is one name":       {func(o *Options) { o.DebugServiceAccount = "a/b/c" }, "--debug-service-account"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			o.NodeName = "node-1"
			c.mutate(o)
			err := o.Validate()
			if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Errorf("Validate() = %v, want %q", err, c.want)
			}
		})
	}
}

func TestEnvironmentFallbacks(t *testing.T) {
	t.Setenv("NODE_NAME", "from-env")
	t.Setenv("NODE_IP", "10.0.0.5")
	t.Setenv("REDIS_URL", "redis://valkey:6379")
	t.Setenv("BALLAST_FLUSH_INTERVAL", "3s")
	t.Setenv("BALLAST_DEBUG_SERVICE_ACCOUNT", "ops/rel-ballast-debug")
	t.Setenv("BALLAST_BUFFER_MAX_WINDOWS", "not-a-number")
	o := NewOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--redis-url", "redis://flag:6379"}); err != nil {
		t.Fatal(err)
	}
	if o.NodeName != "from-env" || o.KubeletURL != "https://10.0.0.5:10250" || o.FlushInterval != 3*time.Second ||
		o.RedisURL != "redis://flag:6379" || o.debugAccept() != (debug.Accept{Namespace: "ops", ServiceAccount: "rel-ballast-debug", Node: "from-env"}) {
		t.Errorf("options %+v", o)
	}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "BALLAST_BUFFER_MAX_WINDOWS") {
		t.Errorf("a bad environment value must fail validation: %v", err)
	}
}

// Every flag of the set falls back to its variable, also one registered by another package
// (controller-runtime's --kubeconfig); the deprecated --kubelet-interval sets the same
// option as --kubelet-min-interval, which wins when both are set.
func TestEnvFallbackCoversEveryFlag(t *testing.T) {
	t.Setenv("BALLAST_KUBECONFIG", "/etc/kube/config")
	t.Setenv("BALLAST_KUBELET_INTERVAL", "30s")
	t.Setenv("BALLAST_KUBELET_MIN_INTERVAL", "15s")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "")
	o := NewOptions()
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if *kubeconfig != "/etc/kube/config" || o.KubeletMinInterval != 15*time.Second {
		t.Errorf("kubeconfig %q, kubelet floor %v", *kubeconfig, o.KubeletMinInterval)
	}
	if got := cli.EnvName(EnvPrefix, "flush-max-windows"); got != "BALLAST_FLUSH_MAX_WINDOWS" {
		t.Errorf("EnvName = %q", got)
	}
	o2 := NewOptions()
	fs2 := flag.NewFlagSet("test", flag.ContinueOnError)
	o2.AddFlags(fs2)
	if err := fs2.Parse([]string{"--kubelet-interval", "20s"}); err != nil || o2.KubeletMinInterval != 20*time.Second {
		t.Errorf("deprecated alias: %v, %v", o2.KubeletMinInterval, err)
	}
}

// Each target's errors become one line of the debug view, joined in order.
func TestErrorsByKey(t *testing.T) {
	got := errorsByKey([]source.Error{
		{Key: "uid-1/app", Kind: cgroup.ErrorKindRead, Err: errors.New("reading cpu.stat: no such file")},
		{Key: "uid-2/side", Kind: cgroup.ErrorKindCounterReset, Err: fmt.Errorf("cpu rate: %w\nsecond line", cgroup.ErrCounterReset)},
		{Key: "uid-1/app", Kind: cgroup.ErrorKindPeak, Err: errors.New("memory.peak: EIO")},
	})
	want := map[string]string{"uid-1/app": "reading cpu.stat: no such file; memory.peak: EIO",
		"uid-2/side": "cpu rate: cpu usage counter went backwards; second line"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("errorsByKey (-want +got)\n%s", d)
	}
	if len(errorsByKey(nil)) != 0 {
		t.Error("no errors, yet something to show")
	}
}

// A kubelet reading is recorded once per refresh (its stats timestamp), and for a pod
// sampled above the floor once per interval window of those timestamps.
func TestKubeletReadingsAreNeverRecordedTwice(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0) // a multiple of 10 s and of 12 s: window boundaries
	const floor = 10 * time.Second
	cases := map[string]struct {
		statsAt, last time.Time
		interval      time.Duration
		want          bool
	}{
		"first reading":                          {t0, time.Time{}, 12 * time.Second, true},
		"same stats again":                       {t0, t0, 12 * time.Second, false},
		"older stats":                            {t0, t0.Add(time.Second), time.Second, false},
		"no stats time":                          {time.Time{}, time.Time{}, time.Second, false},
		"below the floor: every refresh":         {t0.Add(3 * time.Second), t0, time.Second, true},
		"at the floor: every refresh":            {t0.Add(3 * time.Second), t0, floor, true},
		"12s: refreshed within the same window":  {t0.Add(11 * time.Second), t0, 12 * time.Second, false},
		"12s: refreshed in the next window":      {t0.Add(12 * time.Second), t0.Add(11 * time.Second), 12 * time.Second, true},
		"12s: window boundary, not elapsed time": {t0.Add(13 * time.Second), t0.Add(11 * time.Second), 12 * time.Second, true},
		"12s: two windows later":                 {t0.Add(30 * time.Second), t0, 12 * time.Second, true},
	}
	for name, c := range cases {
		if got := due(c.statsAt, c.last, c.interval, floor); got != c.want {
			t.Errorf("%s: due = %t", name, got)
		}
	}
	for _, c := range []struct {
		ivs  []time.Duration
		want time.Duration
	}{{nil, 0}, {[]time.Duration{time.Second}, floor}, {[]time.Duration{12 * time.Second, time.Minute}, 12 * time.Second},
		{[]time.Duration{12 * time.Second, time.Second}, floor}} {
		if got := summaryPeriod(c.ivs, floor); got != c.want {
			t.Errorf("summaryPeriod(%v) = %v, want %v", c.ivs, got, c.want)
		}
	}
	if got := nextTick(t0, time.Second, t0.Add(500*time.Millisecond)); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("nextTick on schedule = %v", got)
	}
	if got := nextTick(t0, time.Second, t0.Add(5*time.Second)); !got.Equal(t0.Add(6 * time.Second)) {
		t.Errorf("nextTick after a stall = %v (missed ticks must be skipped)", got)
	}
}

// testAgent is an agent without cluster access, reading a copy of a cgroup fixture tree.
func testAgent(t *testing.T, fixture string) *Agent {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "cgroup", "testdata", fixture))); err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.NodeName, o.RedisURL = "node-1", "redis://127.0.0.1:1" // nothing listens: writes fail and queue
	o.CgroupRoot = dir
	a := newAgent(o, prometheus.NewRegistry())
	cg, err := cgroup.Open(dir, cgroup.Options{Driver: cgroup.DriverCgroupfs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.Close() })
	a.cg = cg
	return a
}

// On cgroup v1 there is no memory.events to watch: the sampler records cpu and memory and
// finds OOM kills by polling oom_kill, queueing them while Valkey is unreachable.
func TestCycleOnCgroupV1(t *testing.T) {
	a := testAgent(t, "cgroupv1-cgroupfs")
	const uid = "7b2f1d2e-3c4d-4e5f-9a01-b2c3d4e5f6a7"
	const id = "2222222222222222222222222222222222222222222222222222222222222222"
	memDir := filepath.Join(a.o.CgroupRoot, "memory", "kubepods", "burstable", "pod"+uid, id)
	cpuFile := filepath.Join(a.o.CgroupRoot, "cpu,cpuacct", "kubepods", "burstable", "pod"+uid, id, "cpuacct.usage")
	pods := []discovery.Pod{{UID: uid, Namespace: "shop", Name: "web-1", QOS: "Burstable", ProfileRef: "web",
		Hash: "0123456789abcdef", Interval: time.Second, Containers: []discovery.Container{{Name: "app", ID: "containerd://" + id}}}}
	t0 := time.Unix(1_800_000_000, 0)
	a.setPods(pods, discovery.Capacity{}, "", t0)
	g := &group{interval: time.Second, coll: cgroup.NewCollector(a.cg), pods: pods}
	defer g.coll.Close()
	ctx := context.Background()
	src := &cgroupSource{a: a}
	src.cycle(ctx, g, t0)

	before, err := os.ReadFile(cpuFile)
	if err != nil {
		t.Fatal(err)
	}
	var usage uint64
	fmt.Sscan(string(before), &usage)
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(cpuFile, fmt.Sprintf("%d\n", usage+500_000_000)) // half a core for one second
	write(filepath.Join(memDir, "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
	src.cycle(ctx, g, t0.Add(time.Second))

	rep := a.report(debug.Filter{})
	if len(rep.Pods) != 1 || len(rep.Pods[0].Containers) != 1 {
		t.Fatalf("report pods %+v", rep.Pods)
	}
	c := rep.Pods[0].Containers[0]
	last := map[string]float64{}
	for _, s := range c.Last {
		last[s.Signal] = s.Value
	}
	if last["cpu/usage"] != 500 || last["memory/usage"] == 0 {
		t.Errorf("last samples %v, want cpu 500m and a working set", last)
	}
	if c.OOMWatched || c.OOMKills["unknown"] != 1 || c.CgroupMemory != memDir {
		t.Errorf("container report %+v", c)
	}
	if rep.OOMQueued != 1 {
		t.Fatalf("%d OOM events queued, want 1 (Valkey is unreachable)", rep.OOMQueued)
	}
	// The event carries the lifetime peak (memory.max_usage_in_bytes, 48Mi: above every
	// usage sampled, 40Mi) and the limit (memory.limit_in_bytes, 64Mi), read through the
	// cgroup package's rooted reader right after the kill.
	if ev := a.oomq.items[0].ev; ev.Kind != oomKindUnknown || ev.PID != 0 {
		t.Errorf("polled v1 kill: kind %q pid %d, want kind %q (the counters cannot tell the limit) and no victim", ev.Kind, ev.PID, oomKindUnknown)
	}
	if ev := a.oomq.items[0].ev; ev.PeakBytes != 48<<20 || ev.LimitBytes != 64<<20 {
		t.Errorf("queued OOM event peak %d, limit %d; want 48Mi, 64Mi", ev.PeakBytes, ev.LimitBytes)
	}
	ups := a.buf.Take(0)
	got := map[string]int64{}
	for _, u := range ups {
		got[u.Series.Token()] = u.Hist.N
	}
	if got["app/cpu/usage"] != 1 || got["app/memory/usage"] != 2 {
		t.Errorf("buffered samples %v", got)
	}
}

type allowAll struct{}

func (allowAll) ReviewToken(context.Context, string, string) (debug.User, bool, error) {
	return debug.User{Name: debug.ServiceAccountUser("ns", "debug"), Audiences: []string{debug.NodeAudience("node-1")}}, true, nil
}

// Beyond loopback the debug endpoint speaks TLS only (a self-signed certificate when none
// is given), so bearer tokens never cross the network in clear text.
func TestDebugEndpointUsesTLSBeyondLoopback(t *testing.T) {
	o := NewOptions()
	o.NodeName, o.MetricsBindAddress, o.HealthProbeBindAddress, o.DebugBindAddress = "node-1", "0", "0", "0.0.0.0:0"
	a := newAgent(o, prometheus.NewRegistry())
	a.auth = debug.NewAuth(allowAll{}, debug.Accept{Namespace: "ns", ServiceAccount: "debug", Node: "node-1"})
	srvs, err := a.listen()
	if err != nil {
		t.Fatal(err)
	}
	if len(srvs) != 1 {
		t.Fatalf("%d servers", len(srvs))
	}
	go func() { _ = srvs[0].serve(context.Background()) }()
	defer srvs[0].shutdown()
	_, port, err := net.SplitHostPort(srvs[0].ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	get := func(c *http.Client, scheme string, path ...string) (int, string, error) {
		p := debug.Path + "?format=text"
		if len(path) > 0 {
			p = path[0]
		}
		req, _ := http.NewRequest(http.MethodGet, scheme+"://127.0.0.1:"+port+p, nil)
		req.Header.Set("Authorization", "Bearer token")
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	code, body, err := get(tlsClient, "https")
	if err != nil || code != http.StatusOK || !strings.Contains(body, "Node:          node-1") {
		t.Errorf("https: %d %q %v", code, body, err)
	}
	// The agent's own Go profiles sit behind the same protection.
	if code, body, err := get(tlsClient, "https", debug.Path+"/pprof/"); err != nil || code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index: %d %v", code, err)
	}
	if code, body, err := get(http.DefaultClient, "http"); err == nil && (code == http.StatusOK || strings.Contains(body, "node-1")) {
		t.Errorf("plain http answered: %d %q", code, body)
	}
}

// Without BallastConfig nothing is measured (SPEC §2.1); with it, pods are grouped by their
// sampling interval.
func TestRegroupPausesWithoutBallastConfig(t *testing.T) {
	a := testAgent(t, "cgroupfs-v2")
	pods := []discovery.Pod{
		{UID: "u1", Namespace: "ns", Name: "a", Interval: time.Second, Containers: []discovery.Container{{Name: "app", ID: "containerd://1"}}},
		{UID: "u2", Namespace: "ns", Name: "b", Interval: time.Second},
		{UID: "u3", Namespace: "ns", Name: "c", Interval: time.Minute},
	}
	groups := map[time.Duration]*group{}
	now := time.Unix(1_800_000_000, 0)
	src := &cgroupSource{a: a}
	src.regroup(groups, a.applySnapshot(discovery.Snapshot{Synced: true, ConfigFound: true, Pods: pods, Retention: time.Hour}, now), now)
	if len(groups) != 2 || len(groups[time.Second].pods) != 2 || len(groups[time.Minute].pods) != 1 {
		t.Fatalf("groups %v", groups)
	}
	if got := time.Duration(a.retention.Load()); got != time.Hour {
		t.Errorf("retention %v", got)
	}
	src.regroup(groups, a.applySnapshot(discovery.Snapshot{Synced: true, Pods: pods}, now.Add(time.Second)), now.Add(time.Second))
	rep := a.report(debug.Filter{})
	if len(groups) != 0 || len(rep.Pods) != 0 || !strings.Contains(rep.Config.Paused, "BallastConfig") {
		t.Errorf("without BallastConfig: %d groups, %d pods, paused %q", len(groups), len(rep.Pods), rep.Config.Paused)
	}
}
