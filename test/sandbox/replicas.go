package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// Replica is one ballast-control of a leader-elected set (StartReplica).
type Replica struct {
	Name   string
	p      *harness.Proc
	health string
}

// Ready reports the replica's /readyz.
func (r *Replica) Ready() error {
	if done, err := r.p.Exited(); done {
		return fmt.Errorf("%s exited: %v (see %s)", r.Name, err, r.p.Log)
	}
	return httpOK(r.health)
}

// Kill crashes the replica (SIGKILL to its process group: no lease release, no cleanup).
func (r *Replica) Kill() {
	if done, _ := r.p.Exited(); !done {
		_ = syscall.Kill(-r.p.Pid(), syscall.SIGKILL)
		<-r.p.Done()
	}
}

// Stop ends the replica cleanly.
func (r *Replica) Stop() { r.p.Stop(5 * time.Second) }

// Log is the replica's log file.
func (r *Replica) Log() string { return r.p.Log }

// StartReplica starts one more ballast-control with the arguments of the sandbox's first
// one, but with leader election on (the Lease in the operator namespace) and its own health
// port. webhookPort is its webhook port: pass the first one's (WebhookPort) to the replica
// that should serve the sandbox's webhook configurations, any free port otherwise. The
// sandbox's own ballast-control (leader election off) must be stopped first.
func (s *Sandbox) StartReplica(ctx context.Context, name string, webhookPort int) (*Replica, error) {
	var first *harness.Proc
	for _, p := range s.procs {
		if p.Name == "ballast-control" {
			first = p
		}
	}
	if first == nil {
		return nil, fmt.Errorf("ballast-control was never started")
	}
	health, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	args := withFlag(first.Cmd.Args[1:], "--leader-elect", "true")
	args = withFlag(args, "--webhook-port", strconv.Itoa(webhookPort))
	args = withFlag(args, "--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(health))
	args = withFlag(args, "--metrics-bind-address", "0")
	p, err := harness.StartProc(filepath.Join(s.Opts.Dir, "logs"), name, first.Cmd.Path, args...)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	r := &Replica{Name: name, p: p, health: fmt.Sprintf("http://127.0.0.1:%d/readyz", health)}
	return r, harness.Poll(ctx, 60*time.Second, name+" ready", r.Ready)
}

// WebhookPort is the port the sandbox's webhook configurations point at.
func (s *Sandbox) WebhookPort() int {
	for _, p := range s.procs {
		if p.Name == "ballast-control" {
			for i, a := range p.Cmd.Args {
				if a == "--webhook-port" && i+1 < len(p.Cmd.Args) {
					n, _ := strconv.Atoi(p.Cmd.Args[i+1])
					return n
				}
			}
		}
	}
	return 0
}

// LeaseHolder returns the holder identity of ballast-control's leader Lease ("" when none).
func (s *Sandbox) LeaseHolder(ctx context.Context) (string, error) {
	l := &coordinationv1.Lease{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: ballastv1.LeaderElectionID}, l); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// withFlag sets flag to value in args ("--flag value" and "--flag=value" forms are both
// replaced; appended when absent).
func withFlag(args []string, flag, value string) []string {
	out := make([]string, 0, len(args)+2)
	found := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == flag && i+1 < len(args):
			out, found = append(out, flag, value), true
			i++
		case len(a) > len(flag) && a[:len(flag)+1] == flag+"=":
			out, found = append(out, flag+"="+value), true
		default:
			out = append(out, a)
		}
	}
	if !found {
		out = append(out, flag+"="+value)
	}
	return out
}
