// Package agent wires ballast-node: options and flags, discovery, the cgroup sampling
// loop, the kubelet Summary loop, OOM watching, local aggregation and the flush to Valkey,
// and the metrics, health and debug endpoints.
package agent

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ballastk8s/ballast/pkg/cli"
	"github.com/ballastk8s/ballast/pkg/logging"
	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Service-account files mounted into every pod; the defaults of the kubelet client.
const (
	saTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	saCAFile    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// DefaultKubeletMinInterval is the documented floor of the kubelet Summary cadence: the
// kubelet's housekeeping refreshes the stats every 10 s (plus jitter, up to ~15 s), so a
// pod sampled faster gets one ephemeral-storage sample per refresh, never a repeat.
const DefaultKubeletMinInterval = 10 * time.Second

// Options are ballast-node's settings. Every flag falls back to an environment variable
// BALLAST_<FLAG> (upper case, '-' → '_'), which the chart sets; NODE_NAME, NODE_IP
// (for the kubelet URL) and REDIS_URL are read too, as the downward API provides them.
type Options struct {
	NodeName string
	RedisURL string
	// Store holds the store credentials and TLS settings (the password from a file or env
	// BALLAST_STORE_PASSWORD, never a flag); its URL is RedisURL.
	Store store.Config

	CgroupRoot string
	// KubeletCgroupRoot is the kubelet's cgroupRoot (its --cgroup-root), below which its
	// pods' cgroups are; "" reads it from the kubelet's /configz, else the hierarchy root.
	KubeletCgroupRoot string
	CgroupDriver      string
	CgroupVersion     string

	KubeletURL                string
	KubeletTokenFile          string
	KubeletCAFile             string
	KubeletInsecureSkipVerify bool
	// KubeletMinInterval floors the Summary cadence (which otherwise follows the pods'
	// sampling intervals): the kubelet refreshes its stats only every 10–15 s.
	KubeletMinInterval time.Duration

	MinSamplingInterval time.Duration
	FlushInterval       time.Duration
	FlushTimeout        time.Duration
	FlushMaxWindows     int
	BufferMaxWindows    int
	PendingMaxWindows   int

	MetricsBindAddress     string
	HealthProbeBindAddress string
	DebugBindAddress       string
	// DebugProxyBindAddress is a second, opt-in listener of the debug endpoint on the pod
	// IP, for `kubectl ballast node` through the API server's pods/proxy: always TLS and
	// always token-checked (debug.Auth), whatever --debug-auth says.
	DebugProxyBindAddress string
	DebugAuth             bool
	// DebugServiceAccount (NAMESPACE/NAME) is the only identity the debug endpoint serves:
	// its tokens minted for debug.Audience and bound to PodName.
	DebugServiceAccount string
	// PodName is the agent's own pod (env POD_NAME); debug tokens must be bound to it.
	PodName          string
	DebugTLSCertFile string
	DebugTLSKeyFile  string

	LogLevel  string
	LogFormat string

	// EBPF loads the optional eBPF memory signal (OOM victims, reclaim stall).
	EBPF bool

	envErr error
}

// NewOptions returns the documented defaults.
func NewOptions() *Options {
	o := &Options{
		NodeName:               os.Getenv("NODE_NAME"),
		RedisURL:               "redis://localhost:6379",
		Store:                  store.ConfigFromEnv(""),
		CgroupRoot:             "/sys/fs/cgroup",
		CgroupDriver:           "auto",
		CgroupVersion:          "auto",
		KubeletMinInterval:     DefaultKubeletMinInterval,
		MinSamplingInterval:    time.Second,
		FlushInterval:          10 * time.Second,
		FlushTimeout:           5 * time.Second,
		FlushMaxWindows:        5000,
		BufferMaxWindows:       20000,
		PendingMaxWindows:      5000,
		MetricsBindAddress:     ":8080",
		HealthProbeBindAddress: ":8081",
		DebugBindAddress:       "127.0.0.1:8082",
		DebugProxyBindAddress:  "0",
		DebugAuth:              true,
		DebugServiceAccount:    "ballast-system/ballast-debug",
		LogLevel:               "info",
		LogFormat:              "json",
	}
	if v := os.Getenv("REDIS_URL"); v != "" {
		o.RedisURL = v
	}
	if ip := os.Getenv("NODE_IP"); ip != "" {
		o.KubeletURL = "https://" + net.JoinHostPort(ip, "10250")
	}
	if fileExists(saTokenFile) {
		o.KubeletTokenFile = saTokenFile
	}
	if fileExists(saCAFile) {
		o.KubeletCAFile = saCAFile
	}
	return o
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// AddFlags registers every option on fs and applies the BALLAST_* environment fallbacks
// of every flag fs holds (cli.ApplyEnv; --kubeconfig too, when registered before).
func (o *Options) AddFlags(fs *flag.FlagSet) {
	str := func(p *string, name, usage string) { fs.StringVar(p, name, *p, usage) }
	dur := func(p *time.Duration, name, usage string) { fs.DurationVar(p, name, *p, usage) }
	num := func(p *int, name, usage string) { fs.IntVar(p, name, *p, usage) }
	boolean := func(p *bool, name, usage string) { fs.BoolVar(p, name, *p, usage) }

	str(&o.NodeName, "node-name", "name of this node; only its pods are sampled (env NODE_NAME)")
	str(&o.RedisURL, "redis-url", "store URL, redis:// or rediss:// (env REDIS_URL); give the password with --store-password-file")
	o.Store.AddFlags(fs)
	str(&o.CgroupRoot, "cgroup-root", "host cgroup hierarchy as mounted into the agent")
	str(&o.KubeletCgroupRoot, "kubelet-cgroup-root", `the kubelet's cgroupRoot, e.g. /custom or /a.slice/a-b.slice ("": read it from the kubelet's /configz, else "/")`)
	str(&o.CgroupDriver, "cgroup-driver", "kubelet cgroup driver: auto, systemd or cgroupfs")
	str(&o.CgroupVersion, "cgroup-version", "cgroup hierarchy version: auto, v1 or v2")
	str(&o.KubeletURL, "kubelet-url", `local kubelet, https://host:10250 (default from env NODE_IP; "" disables the Summary source)`)
	str(&o.KubeletTokenFile, "kubelet-token-file", "bearer token file for the kubelet (default: the service-account token)")
	str(&o.KubeletCAFile, "kubelet-ca-file", "CA bundle verifying the kubelet's serving certificate (default: the service-account CA)")
	boolean(&o.KubeletInsecureSkipVerify, "kubelet-insecure-skip-verify", "do not verify the kubelet's serving certificate")
	dur(&o.KubeletMinInterval, "kubelet-interval", "deprecated: same as --kubelet-min-interval")
	dur(&o.KubeletMinInterval, "kubelet-min-interval", "floor of the kubelet Summary cadence, which follows the pods' sampling intervals (the kubelet refreshes its stats every 10–15 s)")
	dur(&o.MinSamplingInterval, "min-sampling-interval", "floor of every pod's sampling interval")
	dur(&o.FlushInterval, "flush-interval", "how often aggregated windows are written to Valkey (one pipelined round trip)")
	dur(&o.FlushTimeout, "flush-timeout", "bound of one flush")
	num(&o.FlushMaxWindows, "flush-max-windows", "most windows written in one pipelined batch (draining after an outage takes several)")
	num(&o.BufferMaxWindows, "buffer-max-windows", "bound of the local buffer while Valkey is unreachable; oldest windows are dropped first")
	num(&o.PendingMaxWindows, "pending-max-windows", "bound of the windows held for pods not bound to a profile yet")
	str(&o.MetricsBindAddress, "metrics-bind-address", `address of /metrics ("0" disables it)`)
	str(&o.HealthProbeBindAddress, "health-probe-bind-address", `address of /healthz and /readyz ("0" disables them)`)
	str(&o.DebugBindAddress, "debug-bind-address", `address of the debug endpoint `+debug.Path+` ("0" disables it)`)
	str(&o.DebugProxyBindAddress, "debug-proxy-bind-address", `opt-in address of the debug endpoint for the API server's pods/proxy (kubectl ballast node), e.g. :8083; always TLS and token-checked, the token also read from the `+debug.ProxyAuthHeader+` header ("0" disables it)`)
	boolean(&o.DebugAuth, "debug-auth", "require a bearer token minted for the audience "+debug.Audience+"/<node name> (checked with TokenReview; may be false only on a loopback address)")
	str(&o.DebugServiceAccount, "debug-service-account", "NAMESPACE/NAME of the only service account whose tokens the debug endpoint serves (and those minted for the audience "+debug.Audience+"/<node name> only)")
	str(&o.DebugTLSCertFile, "debug-tls-cert-file", "serving certificate of the debug endpoint (default: self-signed when not bound to loopback)")
	str(&o.DebugTLSKeyFile, "debug-tls-key-file", "key of --debug-tls-cert-file")
	str(&o.LogLevel, "log-level", "debug|info|warn|error")
	str(&o.LogFormat, "log-format", "json|text")
	boolean(&o.EBPF, "ebpf", "load the eBPF memory signal (OOM kill victims, memcg reclaim stall; needs CAP_BPF and CAP_PERFMON and kernel BTF, else the agent runs on cgroup files alone)")

	o.envErr = cli.ApplyEnv(fs, EnvPrefix)
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	errs := []error{o.envErr}
	if o.NodeName == "" {
		errs = append(errs, errors.New("--node-name (env NODE_NAME) is required"))
	}
	if o.RedisURL == "" {
		errs = append(errs, errors.New("--redis-url (env REDIS_URL) is required"))
	}
	errs = append(errs, o.StoreConfig().ValidateFlags())
	if o.CgroupRoot == "" {
		errs = append(errs, errors.New("--cgroup-root must not be empty"))
	}
	if o.KubeletCgroupRoot != "" {
		if _, err := cgroup.ParseRoot(o.KubeletCgroupRoot); err != nil {
			errs = append(errs, fmt.Errorf("--kubelet-cgroup-root: %w", err))
		}
	}
	oneOf := func(flag, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		errs = append(errs, fmt.Errorf("--%s %q: must be one of %s", flag, v, strings.Join(allowed, ", ")))
	}
	oneOf("cgroup-driver", o.CgroupDriver, "auto", "systemd", "cgroupfs")
	oneOf("cgroup-version", o.CgroupVersion, "auto", "v1", "v2")
	oneOf("log-level", strings.ToLower(o.LogLevel), "debug", "info", "warn", "error")
	oneOf("log-format", o.LogFormat, "json", "text")
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"kubelet-min-interval", o.KubeletMinInterval}, {"min-sampling-interval", o.MinSamplingInterval},
		{"flush-interval", o.FlushInterval}, {"flush-timeout", o.FlushTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s %v: must be > 0", d.flag, d.v))
		}
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"flush-max-windows", o.FlushMaxWindows}, {"buffer-max-windows", o.BufferMaxWindows}, {"pending-max-windows", o.PendingMaxWindows}} {
		if n.v < 1 {
			errs = append(errs, fmt.Errorf("--%s %d: must be ≥ 1", n.flag, n.v))
		}
	}
	if (o.DebugTLSCertFile == "") != (o.DebugTLSKeyFile == "") {
		errs = append(errs, errors.New("--debug-tls-cert-file and --debug-tls-key-file go together"))
	}
	if o.DebugBindAddress != "0" && o.DebugBindAddress != "" {
		if _, _, err := net.SplitHostPort(o.DebugBindAddress); err != nil {
			errs = append(errs, fmt.Errorf("--debug-bind-address %q: %w", o.DebugBindAddress, err))
		} else if !o.DebugAuth && !debug.Loopback(o.DebugBindAddress) {
			errs = append(errs, fmt.Errorf("--debug-auth=false needs a loopback --debug-bind-address, not %q: the endpoint reveals workload data", o.DebugBindAddress))
		}
	}
	if ns, name, ok := strings.Cut(o.DebugServiceAccount, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		errs = append(errs, fmt.Errorf("--debug-service-account %q: must be NAMESPACE/NAME", o.DebugServiceAccount))
	}
	if o.DebugProxyBindAddress != "0" && o.DebugProxyBindAddress != "" {
		if _, _, err := net.SplitHostPort(o.DebugProxyBindAddress); err != nil {
			errs = append(errs, fmt.Errorf("--debug-proxy-bind-address %q: %w", o.DebugProxyBindAddress, err))
		}
	}
	return errors.Join(errs...)
}

// debugAccept is the identity the debug endpoint serves.
func (o *Options) debugAccept() debug.Accept {
	ns, name, _ := strings.Cut(o.DebugServiceAccount, "/")
	return debug.Accept{Namespace: ns, ServiceAccount: name, Node: o.NodeName}
}

// debugProxy reports whether the pods/proxy listener of the debug endpoint is on.
func (o *Options) debugProxy() bool {
	return o.DebugProxyBindAddress != "" && o.DebugProxyBindAddress != "0"
}

// SetupLogging installs the process logger per --log-level and --log-format.
func (o *Options) SetupLogging() {
	ctrl.SetLogger(logging.New(o.LogLevel, o.LogFormat, os.Stderr))
}

// StoreConfig is the store configuration: the URL of --redis-url with the store flags.
func (o *Options) StoreConfig() store.Config {
	c := o.Store
	c.URL = o.RedisURL
	return c
}
