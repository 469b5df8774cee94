package nodeagent

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
)

// fakePodIP is the status.podIP of the agent Pod objects of the pods/proxy tests. The API
// server proxies only to global unicast pod IPs (it refuses loopback with "address not
// allowed"), so the pod gets an address of TEST-NET-1 (RFC 5737, never routed) and the API
// server's "cluster" egress goes through egressProxy, which maps that address to
// 127.0.0.1: nothing leaves loopback.
const fakePodIP = "192.0.2.10"

// egressProxy is a stand-in for the konnectivity/HTTP CONNECT egress a real control plane
// uses to reach the pod network (a fake: there is no pod network here). It tunnels CONNECT
// requests to fakePodIP:port onto 127.0.0.1:port and to loopback targets unchanged, and
// refuses every other address.
type egressProxy struct {
	ln net.Listener
}

// startEgressProxy listens on a unix socket in dir (the API server's HTTP CONNECT egress
// over TCP insists on TLS client certificates; over a unix socket it is plain) and writes the API server's
// EgressSelectorConfiguration naming it into dir; it returns the proxy and the file.
func startEgressProxy(dir string) (*egressProxy, string, error) {
	ln, err := net.Listen("unix", filepath.Join(dir, "egress.sock"))
	if err != nil {
		return nil, "", err
	}
	p := &egressProxy{ln: ln}
	go p.accept()
	cfg := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
  - name: cluster
    connection:
      proxyProtocol: HTTPConnect
      transport:
        uds:
          udsName: %s
`, ln.Addr())
	path := filepath.Join(dir, "egress-selector.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	return p, path, nil
}

func (p *egressProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.tunnel(c)
	}
}

func (p *egressProxy) tunnel(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	host, port, err := net.SplitHostPort(req.Host)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\n\r\n")
		return
	}
	if host == fakePodIP {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		_, _ = io.WriteString(c, "HTTP/1.1 403 Forbidden\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", net.JoinHostPort(host, port))
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}
