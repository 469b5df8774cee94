package logs

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ballastk8s/ballast/test/harness"
)

// gatedProxy forwards to the API server and holds every LimitRange list until opened: the
// informer cache of LimitRanges cannot sync while it is closed.
type gatedProxy struct {
	open chan struct{}
	once sync.Once
	held sync.WaitGroup
}

func (g *gatedProxy) release() { g.once.Do(func() { close(g.open) }) }

// TestReadyzWaitsForCachesAndWebhook runs the real binary through a proxy that stalls the
// LimitRange list: while the webhook server already answers TLS, /readyz fails (informer
// caches not synced), so no Service routes admissions to a replica that would
// answer from an empty cache; once the list goes through, /readyz turns 200.
func TestReadyzWaitsForCachesAndWebhook(t *testing.T) {
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cluster(t, port)
	gate := &gatedProxy{open: make(chan struct{})}
	defer gate.release()
	target, err := url.Parse(srv.Kube.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(srv.Kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport, rp.FlushInterval = transport, -1
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/limitranges") && r.URL.Query().Get("watch") == "" {
			gate.held.Add(1)
			<-gate.open
			gate.held.Done()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close) // after the process's own cleanup (registered later) has stopped it
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: %q}}]
users: [{name: admin, user: {}}]
contexts: [{name: proxy, context: {cluster: proxy, user: admin}}]
current-context: proxy
`, proxy.URL)), 0o600); err != nil {
		t.Fatal(err)
	}

	health, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := launch(t, kubeconfig, port, health)
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", health)

	// The webhook server serves TLS while the LimitRange list is held...
	harness.Eventually(t, 60*time.Second, "webhook server serving", func() error {
		select {
		case <-p.done:
			return fmt.Errorf("ballast-control exited:\n%s", p.logs.String())
		default:
		}
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a reachability probe
		if err != nil {
			return err
		}
		return conn.Close()
	})
	// ...and /readyz is not OK (the old ping answered 200 here). controller-runtime
	// withholds the reason from the probe's body.
	if status, body := get(t, readyz); status == http.StatusOK {
		t.Fatalf("/readyz with an unsynced LimitRange cache = %d %q, want a failure", status, body)
	}
	gate.release()
	harness.Eventually(t, 60*time.Second, "/readyz 200 after the caches sync", func() error {
		if status, body := get(t, readyz); status != http.StatusOK {
			return fmt.Errorf("%d %s", status, body)
		}
		return nil
	})
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
