package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
)

// nobody is a debug.Reviewer that accepts no token (a fake: the real TokenReview runs in
// test/integration/nodeagent).
type nobody struct{}

func (nobody) ReviewToken(context.Context, string, string) (debug.User, bool, error) {
	return debug.User{}, false, nil
}

// --debug-auth=false opens the loopback endpoint only: the pods/proxy listener is always
// TLS and always checks the caller's token.
func TestPodsProxyListenerIsAlwaysProtected(t *testing.T) {
	a := testAgent(t, "cgroupfs-v2")
	a.o.DebugAuth = false
	a.auth = debug.NewAuth(nobody{}, debug.Accept{})
	get := func(h http.Handler) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, debug.Path, nil))
		return rec.Code
	}
	loop, loopTLS, err := a.debugHandler("127.0.0.1:8082", a.o.DebugAuth, false)
	if err != nil {
		t.Fatal(err)
	}
	proxy, proxyTLS, err := a.debugHandler("127.0.0.1:8083", true, true)
	if err != nil {
		t.Fatal(err)
	}
	if code := get(loop); code != http.StatusOK || loopTLS != nil {
		t.Errorf("loopback endpoint with --debug-auth=false: %d, TLS %t; want 200 without TLS", code, loopTLS != nil)
	}
	if code := get(proxy); code != http.StatusUnauthorized || proxyTLS == nil {
		t.Errorf("pods/proxy endpoint: %d, TLS %t; want 401 over TLS", code, proxyTLS != nil)
	}
}
