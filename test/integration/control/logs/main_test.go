// Package logs runs the real ballast-control binary against a real kube-apiserver and
// Valkey and reads its JSON log output, as an operator would: SPEC §10.2 (suppressed
// actions at warn with kill_switch and kill_switch_reason) and §11.4 (policy and
// configuration problems once per change).
package logs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ballastk8s/ballast/test/harness"
)

var (
	srv     *harness.Servers
	control string // the built ballast-control binary
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ballast-logs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	control = filepath.Join(dir, "ballast-control")
	build := exec.Command("go", "build", "-o", control, "./cmd/ballast-control")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ballast-control: %v\n%s", err, out)
		os.Exit(1)
	}
	harness.Main(m, harness.Need{Kube: true, Valkey: true}, &srv)
}

// logBuffer collects a process's stderr; safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the JSON lines written so far (klog lines of client-go are skipped) for
// which match holds.
func (l *logBuffer) lines(match func(map[string]any) bool) []map[string]any {
	l.mu.Lock()
	data := append([]byte(nil), l.b.Bytes()...)
	l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := map[string]any{}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if match(m) {
			out = append(out, m)
		}
	}
	return out
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// msg matches lines whose msg contains substr and whose fields equal kv (pairs).
func msg(substr string, kv ...any) func(map[string]any) bool {
	return func(m map[string]any) bool {
		s, _ := m["msg"].(string)
		if !strings.Contains(s, substr) {
			return false
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if m[kv[i].(string)] != kv[i+1] {
				return false
			}
		}
		return true
	}
}

// process is one running ballast-control.
type process struct {
	cmd  *exec.Cmd
	logs *logBuffer
	done chan struct{}
}

// startControl runs ballast-control the way test/sandbox does (loopback webhook with
// built-in certificates, no leader election) plus args, and waits until it is ready.
func startControl(t *testing.T, webhookPort int, args ...string) *process {
	t.Helper()
	health, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := launch(t, srv.Kube.Kubeconfig, webhookPort, health, args...)
	harness.Eventually(t, 60*time.Second, "ballast-control ready", func() error {
		select {
		case <-p.done:
			return fmt.Errorf("ballast-control exited:\n%s", p.logs.String())
		default:
		}
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
	})
	return p
}

// launch starts ballast-control against kubeconfig with the sandbox's flags plus args, its
// output captured, and stops it when the test ends; it does not wait for readiness.
func launch(t *testing.T, kubeconfig string, webhookPort, health int, args ...string) *process {
	t.Helper()
	base := []string{"--kubeconfig", kubeconfig, "--leader-elect=false", "--operator-namespace", operatorNS,
		"--redis-url", srv.Valkey.URL(), "--webhook-host", "127.0.0.1", "--webhook-port", strconv.Itoa(webhookPort),
		"--webhook-dns-names", "127.0.0.1", "--webhook-cert-path", t.TempDir(), "--webhook-config-name", webhookConfigName,
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(health), "--metrics-bind-address", "0", "--log-format", "json"}
	p := &process{logs: &logBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(control, append(base, args...)...)
	p.cmd.Stderr, p.cmd.Stdout = p.logs, p.logs
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("ballast-control output:\n%s", p.logs.String())
		}
	})
	return p
}

// waitLines waits until at least n lines match and returns them.
func (p *process) waitLines(t *testing.T, what string, n int, match func(map[string]any) bool) []map[string]any {
	t.Helper()
	var got []map[string]any
	harness.Eventually(t, 30*time.Second, what, func() error {
		if got = p.logs.lines(match); len(got) < n {
			return fmt.Errorf("%d matching lines, want %d", len(got), n)
		}
		return nil
	})
	return got
}
