package discovery

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// A refused dial waits for the server to listen; other errors and cancellation return.
func TestWaitForServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused from now on
	dial := waitForServer(&rest.Config{}).Dial

	ctx, cancel := context.WithTimeout(context.Background(), 3*redialEvery)
	defer cancel()
	start := time.Now()
	if _, err := dial(ctx, "tcp", addr); err == nil || time.Since(start) < 2*redialEvery {
		t.Fatalf("dial of a refusing server: %v after %v, want it to keep trying until the context ends", err, time.Since(start))
	}

	accepted := make(chan net.Listener)
	go func() {
		time.Sleep(2 * redialEvery) // the server comes back while the dial waits
		l, err := net.Listen("tcp", addr)
		if err != nil {
			close(accepted)
			return
		}
		accepted <- l
	}()
	c, err := dial(context.Background(), "tcp", addr)
	l := <-accepted
	if l == nil {
		t.Skip("the port was taken meanwhile")
	}
	defer l.Close()
	if err != nil {
		t.Fatalf("dial did not wait for the server: %v", err)
	}
	c.Close()

	if _, err := dial(context.Background(), "tcp", "256.0.0.1:1"); err == nil || errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a non-refusal error must return at once, got %v", err)
	}
}
