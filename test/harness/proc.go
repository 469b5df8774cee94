package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Proc is one child process of a test bed (the sandbox's and the real-node tier's
// components): its own process group, stdout and stderr in <logDir>/<name>.log, killed by
// the kernel when the starting thread dies (Pdeathsig), so nothing outlives the tests.
type Proc struct {
	Name string
	// Log is the path of the process's log file.
	Log  string
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProc starts bin with args, its output in <logDir>/<name>.log (logDir is created).
func StartProc(logDir, name, bin string, args ...string) (*Proc, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has ended; Err then tells how.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error once Done is closed (nil before, and for a clean exit).
func (p *Proc) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Pid is the process ID (also its process group's).
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Alive returns nil while the process runs, and an error with the log's tail once it ended.
func (p *Proc) Alive() error {
	if done, err := p.Exited(); done {
		return fmt.Errorf("%s exited (%v); log tail:\n%s", p.Name, err, Tail(p.Log, 2000))
	}
	return nil
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and waits for the end.
// A nil or ended process is left alone.
func (p *Proc) Stop(grace time.Duration) {
	if p == nil || p.Cmd == nil || p.Cmd.Process == nil {
		return
	}
	if done, _ := p.Exited(); done {
		return
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.done
	}
}

// Tail is the last n bytes of the file at path (or the read error's text).
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// Poll runs f every 100 ms until it returns nil, or fails with what and f's last error
// once ctx ends or within has passed (Eventually's form for code without a testing.T).
func Poll(ctx context.Context, within time.Duration, what string, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %s: %w", what, within, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
