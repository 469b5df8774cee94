package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Valkey is one valkey-server (or redis-server) process on a loopback port.
type Valkey struct {
	Addr string // host:port
	Bin  string
	// Password is the server's requirepass (StartValkeyAuth); Do authenticates with it.
	Password string
	cmd      *exec.Cmd
	dir      string
	extra    []string
	done     chan struct{}
}

// Cluster is three Valkey masters in cluster mode with all 16384 slots assigned.
type Cluster struct {
	Nodes    []*Valkey
	busPorts []int
}

// ValkeyServerBinary finds valkey-server, or redis-server as the fallback.
func ValkeyServerBinary() (string, error) {
	if p := os.Getenv("BALLAST_VALKEY_SERVER"); p != "" {
		return p, nil
	}
	return lookPathAny("install it with hack/install-deps.sh (Debian bookworm-backports valkey-server, or redis-server)",
		"valkey-server", "redis-server")
}

// StartValkey starts a standalone server with persistence off on a free loopback port.
func StartValkey(extra ...string) (*Valkey, error) {
	return startValkey("", extra...)
}

// StartValkeyAuth starts a standalone server that requires password (requirepass).
func StartValkeyAuth(password string, extra ...string) (*Valkey, error) {
	return startValkey("", append([]string{"--requirepass", password}, extra...)...)
}

// Restart starts the server again on the same port after Stop (used by outage tests).
func (v *Valkey) Restart() error {
	nv, err := startValkey(v.Addr, v.extra...)
	if err != nil {
		return err
	}
	*v = *nv
	return nil
}

func startValkey(addr string, extra ...string) (*Valkey, error) {
	bin, err := ValkeyServerBinary()
	if err != nil {
		return nil, err
	}
	if addr == "" {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "ballast-valkey-")
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--bind", "127.0.0.1", "--port", port, "--dir", dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no",
		"--logfile", filepath.Join(dir, "server.log"),
	}, extra...)
	cmd := exec.Command(bin, args...)
	// The server dies with the test process, even when the test binary is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	v := &Valkey{Addr: addr, Bin: bin, cmd: cmd, dir: dir, extra: extra, done: make(chan struct{})}
	for i, a := range extra {
		if a == "--requirepass" && i+1 < len(extra) {
			v.Password = extra[i+1]
		}
	}
	go func() { _ = cmd.Wait(); close(v.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if reply, err := v.Do("PING"); err == nil && reply == "PONG" {
			return v, nil
		}
		select {
		case <-v.done:
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			v.cleanup()
			return nil, fmt.Errorf("%s exited at start: %s", bin, log)
		default:
		}
		if time.Now().After(deadline) {
			v.Stop()
			return nil, fmt.Errorf("%s did not answer PING on %s within 15s", bin, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// URL is the redis:// URL of the server.
func (v *Valkey) URL() string { return "redis://" + v.Addr }

// Pid is the server's process id (0 when it is not running).
func (v *Valkey) Pid() int {
	if v == nil || v.cmd == nil || v.cmd.Process == nil {
		return 0
	}
	return v.cmd.Process.Pid
}

// Stop kills the server and removes its folder.
func (v *Valkey) Stop() {
	if v == nil || v.cmd == nil || v.cmd.Process == nil {
		return
	}
	_ = v.cmd.Process.Kill()
	<-v.done
	v.cleanup()
}

func (v *Valkey) cleanup() { _ = os.RemoveAll(v.dir) }

// Do sends one command over a fresh connection and returns a simple string, integer or
// bulk reply rendered as text. It is a bootstrap helper for the harness (PING, CLUSTER
// setup); tests talk to the server through pkg/store.
func (v *Valkey) Do(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", v.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	if v.Password != "" {
		if _, err := roundTrip(conn, r, "AUTH", v.Password); err != nil {
			return "", fmt.Errorf("AUTH: %w", err)
		}
	}
	return roundTrip(conn, r, args...)
}

// roundTrip sends one command and reads its reply.
func roundTrip(conn net.Conn, r *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return line, nil
	}
}

// StartCluster starts three masters in cluster mode, splits the slots between them and
// waits until every node reports cluster_state:ok.
func StartCluster() (*Cluster, error) {
	c := &Cluster{}
	for i := 0; i < 3; i++ {
		// The bus port defaults to port + 10000, which may be some other socket's ephemeral
		// port: ask the kernel for a free one too.
		bus, err := FreePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		v, err := StartValkey("--cluster-enabled", "yes", "--cluster-node-timeout", "5000",
			"--cluster-config-file", "nodes.conf", "--cluster-port", strconv.Itoa(bus))
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, v)
		c.busPorts = append(c.busPorts, bus)
	}
	const slots = 16384
	for i, n := range c.Nodes {
		lo, hi := i*slots/3, (i+1)*slots/3-1
		if _, err := n.Do("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			c.Stop()
			return nil, fmt.Errorf("assigning slots %d-%d: %w", lo, hi, err)
		}
	}
	for i, n := range c.Nodes[1:] {
		host, port, _ := net.SplitHostPort(n.Addr)
		if _, err := c.Nodes[0].Do("CLUSTER", "MEET", host, port, strconv.Itoa(c.busPorts[i+1])); err != nil {
			c.Stop()
			return nil, fmt.Errorf("cluster meet %s: %w", n.Addr, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for _, n := range c.Nodes {
			info, err := n.Do("CLUSTER", "INFO")
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
				ok = false
				break
			}
		}
		if ok {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.Stop()
			return nil, errors.New("valkey cluster did not reach cluster_state:ok within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Addrs lists the nodes' host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// URL is a redis:// URL naming every node (the first as host, the rest as addr parameters).
func (c *Cluster) URL() string {
	u := "redis://" + c.Nodes[0].Addr
	for i, n := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + n.Addr
	}
	return u
}

// Stop kills every node.
func (c *Cluster) Stop() {
	if c == nil {
		return
	}
	for _, n := range c.Nodes {
		n.Stop()
	}
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	for range 64 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		handedOutMu.Lock()
		seen := handedOut[port]
		handedOut[port] = true
		handedOutMu.Unlock()
		if !seen {
			return port, nil
		}
	}
	return 0, errors.New("no free port not handed out before after 64 tries")
}

// handedOut remembers the ports FreePort returned: the kernel may offer a port again as
// soon as the probe closes it, before the component it was meant for binds it, and two
// components of one sandbox then race for it (seen: kube-scheduler losing its port to
// ballast-control's webhook server).
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)
