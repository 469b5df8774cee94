// Package sandbox runs Ballast end to end on one machine: a loopback control plane
// (etcd, kube-apiserver, kube-scheduler, kube-controller-manager from the test bed), kwok
// nodes for the API side, and per simulated node a synthetic cgroup tree driven by a
// workload model plus a kubelet Summary stub, read by a real ballast-node; a real Valkey
// and a real ballast-control (controllers and webhook with built-in certificates). Only the
// kubelet and the kernel are simulated. `make demo` and the end-to-end test both use it.
package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// proc is one child process whose output goes to a log file in the sandbox folder.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func startProc(dir, name, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Children die with the sandbox, also when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process ended (and how).
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p == nil || p.cmd.Process == nil {
		return
	}
	if done, _ := p.exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// poll runs f until it returns nil, ctx ends or the timeout passes.
func poll(ctx context.Context, timeout time.Duration, what string, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	for {
		if err = f(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %s: %w", what, timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
