package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The multi-node tier (Options.Nodes ≥ 2). The tier's own network namespace becomes the
// "router": it holds the control plane, the service and DNS stand-ins, and a Linux bridge
// (routerBridge, gatewayIP/24). Each node is a named network namespace (ip netns add;
// /run is the tier's private tmpfs) joined to the bridge by a veth pair: node IP
// 10.200.0.<i+1> on its eth0, a default route via the router. The router routes each
// node's pod CIDR via that node's IP, so a pod on node-a reaches a pod on node-b, and
// every pod reaches the cluster IPs and the cluster DNS IP (on the router's loopback)
// through its node's default route. containerd and the kubelet of each node run in its
// namespace (nsenter --net), with their own socket, state and root folders, CNI bridge
// (cbr-<node>) and host-local data dir, kubelet root-dir and podLogsDirectory; all but
// the first kubelet get a cgroupRoot of their own (/<cgroupRootPrefix><node>).
const routerBridge = "nodes0"

// cgroupRootPrefix names the cgroup roots the multi-node tier makes for its second and
// later kubelets; leaks.go removes them after teardown.
const cgroupRootPrefix = "ballast-tier-"

// setupRouter builds the router namespace's network and one namespace per node.
func setupRouter(ms []*member) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmds := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", routerBridge, "type", "bridge"},
		{"addr", "add", gatewayIP + "/24", "dev", routerBridge},
		{"link", "set", routerBridge, "up"},
		{"addr", "add", apiSvcIP + "/32", "dev", "lo"},
		{"addr", "add", dnsIP + "/32", "dev", "lo"},
	}
	for _, m := range ms {
		host := "veth-" + m.Name
		cmds = append(cmds,
			[]string{"netns", "add", m.netns},
			[]string{"link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", m.netns},
			[]string{"link", "set", host, "master", routerBridge},
			[]string{"link", "set", host, "up"},
			[]string{"-n", m.netns, "link", "set", "lo", "up"},
			[]string{"-n", m.netns, "addr", "add", m.IP + "/24", "dev", "eth0"},
			[]string{"-n", m.netns, "link", "set", "eth0", "up"},
			[]string{"-n", m.netns, "route", "add", "default", "via", gatewayIP, "dev", "eth0"},
			[]string{"route", "add", m.PodCIDR, "via", m.IP, "dev", routerBridge},
		)
	}
	for _, args := range cmds {
		if _, err := run(ctx, "ip", args...); err != nil {
			return err
		}
	}
	// Forwarding in every namespace: the router between nodes, each node between its
	// bridge and its eth0. Network sysctls are per namespace: nsenter writes the node's.
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return err
	}
	for _, m := range ms {
		if _, err := run(ctx, "nsenter", "--net=/run/netns/"+m.netns, "--", "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"); err != nil {
			return err
		}
	}
	return nil
}

// makeCgroupRoot creates root (e.g. /ballast-tier-node-b) in every cgroup v1 hierarchy
// (the kubelet refuses a cgroupRoot missing from any of cpu, cpuacct, cpuset, memory,
// pids, systemd), copying the parent's cpus and mems into a cpuset one.
func makeCgroupRoot(root string) error {
	entries, err := os.ReadDir(cgroupFS)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, e := range entries {
		h, err := filepath.EvalSymlinks(filepath.Join(cgroupFS, e.Name()))
		if err != nil || seen[h] {
			continue
		}
		seen[h] = true
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			continue // not a hierarchy
		}
		d := filepath.Join(h, root)
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("creating cgroup %s: %w", d, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(h, f))
			if err != nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(d, f), []byte(strings.TrimSpace(string(v))), 0o644); err != nil {
				return fmt.Errorf("writing %s/%s: %w", d, f, err)
			}
		}
	}
	return nil
}
