package harness

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// StopAPIServer stops the running kube-apiserver process (SIGTERM, as a rolling restart
// does; SIGKILL after 10 s, as a crash) and returns once it has exited; etcd keeps
// running. StartAPIServer starts the same command line again: the same port, certificates,
// service-account keys and etcd, so every client and token stays valid. Outage tests use
// the pair for a real API-server restart.
func (k *Kube) StopAPIServer() error {
	pid, argv, env, err := k.apiServerProcess()
	if err != nil {
		return err
	}
	k.argv, k.env = argv, env
	if k.restarted != nil {
		return k.stopRestarted()
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping kube-apiserver (pid %d): %w", pid, err)
	}
	// envtest's process state reaps the child; wait until it is gone or a zombie. A
	// graceful shutdown that drains open watches for longer ends as a crash would.
	gone := func() error {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil || statState(b) == "Z" {
			return nil
		}
		return fmt.Errorf("kube-apiserver pid %d still running", pid)
	}
	if poll(10*time.Second, gone) == nil {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return poll(30*time.Second, gone)
}

// StartAPIServer starts the API server StopAPIServer stopped and waits until it is ready.
func (k *Kube) StartAPIServer() error {
	if k.argv == nil {
		return fmt.Errorf("StartAPIServer without StopAPIServer")
	}
	cmd := exec.Command(k.argv[0], k.argv[1:]...)
	cmd.Env = k.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	k.restarted = cmd
	k.restartDone = make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(k.restartDone)
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	return poll(60*time.Second, func() error {
		select {
		case <-k.restartDone:
			return fmt.Errorf("kube-apiserver exited at start")
		default:
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err != nil {
			return fmt.Errorf("readyz: %w (%s)", err, body)
		}
		return nil
	})
}

func (k *Kube) stopRestarted() error {
	if k.restarted == nil {
		return nil
	}
	_ = k.restarted.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.restartDone:
	case <-time.After(10 * time.Second):
		_ = k.restarted.Process.Kill()
		<-k.restartDone
	}
	k.restarted = nil
	return nil
}

// apiServerProcess finds this test process's kube-apiserver child serving k.Config.Host
// and returns its pid, command line and environment.
func (k *Kube) apiServerProcess() (int, []string, []string, error) {
	if k.restarted != nil {
		return k.restarted.Process.Pid, k.argv, k.env, nil
	}
	u, err := url.Parse(k.Config.Host)
	if err != nil {
		return 0, nil, nil, err
	}
	want := "--secure-port=" + u.Port()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil || statPPID(stat) != os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(argv[0]) != "kube-apiserver" || !contains(argv, want) {
			continue
		}
		envRaw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			return 0, nil, nil, err
		}
		return pid, argv, strings.Split(strings.TrimRight(string(envRaw), "\x00"), "\x00"), nil
	}
	return 0, nil, nil, fmt.Errorf("no kube-apiserver child with %s", want)
}

// statPPID and statState read fields of /proc/<pid>/stat (after the parenthesised comm).
func statPPID(stat []byte) int {
	f := statFields(stat)
	if len(f) < 2 {
		return -1
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func statState(stat []byte) string {
	if f := statFields(stat); len(f) > 0 {
		return f[0]
	}
	return ""
}

func statFields(stat []byte) []string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// poll calls f until it succeeds or within has passed, and returns its last error then.
func poll(within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
