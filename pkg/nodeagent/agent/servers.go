package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
)

// server is one listening HTTP endpoint.
type server struct {
	name string
	srv  *http.Server
	ln   net.Listener
}

func (s *server) serve(context.Context) error {
	err := s.srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (s *server) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// listen binds every enabled endpoint, so a taken port fails the start at once.
func (a *Agent) listen() ([]*server, error) {
	var out []*server
	add := func(name, addr string, h http.Handler, tlsCfg *tls.Config) error {
		if addr == "" || addr == "0" {
			return nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s endpoint on %s: %w", name, addr, err)
		}
		if tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
		}
		out = append(out, &server{name: name, ln: ln,
			srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsCfg}})
		return nil
	}
	closeAll := func() {
		for _, s := range out {
			_ = s.ln.Close()
		}
	}

	metrics := http.NewServeMux()
	metrics.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{a.reg, ctrlmetrics.Registry}, promhttp.HandlerOpts{}))
	if err := add("metrics", a.o.MetricsBindAddress, metrics, nil); err != nil {
		return nil, err
	}
	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := a.healthy(a.now()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	health.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if a.disco == nil || !a.disco.Synced() {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	if err := add("health", a.o.HealthProbeBindAddress, health, nil); err != nil {
		closeAll()
		return nil, err
	}
	dbg, tlsCfg, err := a.debugHandler(a.o.DebugBindAddress, a.o.DebugAuth, false)
	if err == nil {
		err = add("debug", a.o.DebugBindAddress, dbg, tlsCfg)
	}
	if err == nil && a.o.debugProxy() {
		dbg, tlsCfg, err = a.debugHandler(a.o.DebugProxyBindAddress, true, true)
		if err == nil {
			err = add("debug-proxy", a.o.DebugProxyBindAddress, dbg, tlsCfg)
		}
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	return out, nil
}

// debugHandler is the debug endpoint for addr, behind debug.Auth (a TokenReview for
// debug.Audience, the debug service account's tokens bound to this pod only) when protected (--debug-auth, allowed false on loopback only), and over TLS unless bound
// to loopback without a certificate. The pods/proxy listener (proxied) is always protected
// and always TLS: the API server reaches it over the pod network.
func (a *Agent) debugHandler(addr string, protected, proxied bool) (http.Handler, *tls.Config, error) {
	inner := http.NewServeMux()
	inner.Handle(debug.Path, debug.Handler(a.report))
	// Go profiles of the agent itself at /debug/ballast/pprof/ (net/http/pprof expects its
	// paths under /debug/pprof/).
	pp := http.NewServeMux()
	pp.HandleFunc("/debug/pprof/", pprof.Index)
	pp.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	pp.HandleFunc("/debug/pprof/profile", pprof.Profile)
	pp.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	pp.HandleFunc("/debug/pprof/trace", pprof.Trace)
	inner.HandleFunc(debug.Path+"/pprof/", func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/debug/pprof/" + strings.TrimPrefix(r.URL.Path, debug.Path+"/pprof/")
		pp.ServeHTTP(w, r2)
	})
	var h http.Handler = inner
	if protected {
		if a.auth == nil {
			return nil, nil, fmt.Errorf("debug endpoint on %s: no authenticator", addr)
		}
		h = a.auth.Wrap(h)
	}
	mux := http.NewServeMux()
	mux.Handle(debug.Path, h)
	mux.Handle(debug.Path+"/", h)
	if addr == "" || addr == "0" {
		return mux, nil, nil
	}
	var cert tls.Certificate
	var err error
	switch {
	case a.o.DebugTLSCertFile != "":
		cert, err = tls.LoadX509KeyPair(a.o.DebugTLSCertFile, a.o.DebugTLSKeyFile)
	case proxied || !debug.Loopback(addr):
		host, _, _ := net.SplitHostPort(addr)
		cert, err = debug.SelfSigned([]string{a.o.NodeName, host, "localhost", "127.0.0.1"}, a.now())
	default:
		return mux, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("debug endpoint certificate: %w", err)
	}
	return mux, &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}
