package node

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Addresses inside the private network namespace; none of them exists on the host.
const (
	NodeIP     = "10.200.0.1"
	gatewayIP  = "10.200.0.254"
	podCIDR    = "10.244.0.0/24"
	serviceNet = "10.96.0.0/16"
	apiSvcIP   = "10.96.0.1"
	dnsIP      = "10.96.0.10"
	NodeName   = "node-tier"
	cniBinDir  = "/usr/lib/cni"
)

// inner runs as PID 1 of the private namespaces: it prepares mounts and the network,
// starts the node, runs the tests and tears the node down, also on SIGTERM.
func inner(m *testing.M, dir string, out **Node, opts Options) int {
	if err := setupNamespace(dir, opts); err != nil {
		fmt.Fprintln(os.Stderr, "node tier: namespace setup:", err)
		return 1
	}
	started := time.Now()
	ctx := context.Background()
	n, err := StartWith(ctx, dir, opts)
	if n != nil {
		stopped := make(chan struct{})
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		go func() {
			select {
			case <-sigs:
				fmt.Fprintln(os.Stderr, "node tier: interrupted, tearing the node down")
				n.Stop()
				os.Exit(1)
			case <-stopped:
			}
		}()
		defer func() {
			close(stopped)
			t0 := time.Now()
			n.Stop()
			fmt.Printf("node tier: teardown (pods, kubelet, containerd, control plane, cgroups) in %s\n", time.Since(t0).Round(100*time.Millisecond))
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "node tier: starting the node:", err)
		return 1
	}
	n.Timings.Started = time.Since(started)
	fmt.Printf("node tier: nodes %s Ready with images imported in %s\n", strings.Join(n.Nodes, ", "), n.Timings.Started.Round(time.Millisecond))
	*out = n
	return m.Run()
}

// setupNamespace makes the mount namespace's own /run and /var/log (tmpfs), lets mounts
// propagate to containers, and builds the network: lo, and a veth whose near end carries
// the node IP and a default route (pods reach the node and the service stand-ins through
// the CNI bridge).
func setupNamespace(dir string, opts Options) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SHARED, ""); err != nil {
		return fmt.Errorf("making / rshared: %w", err)
	}
	for _, p := range []string{"/run", "/var/log"} {
		if err := syscall.Mount("tmpfs", p, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("mounting tmpfs on %s: %w", p, err)
		}
	}
	if opts.Nodes > 1 {
		return setupRouter(members(dir, opts))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "node0", "type", "veth", "peer", "name", "node0p"},
		{"addr", "add", NodeIP + "/24", "dev", "node0"},
		{"link", "set", "node0", "up"},
		{"link", "set", "node0p", "up"},
		{"route", "add", "default", "via", gatewayIP, "dev", "node0", "onlink"},
		{"addr", "add", apiSvcIP + "/32", "dev", "lo"},
		{"addr", "add", dnsIP + "/32", "dev", "lo"},
	} {
		if _, err := run(ctx, "ip", args...); err != nil {
			return err
		}
	}
	return nil
}
