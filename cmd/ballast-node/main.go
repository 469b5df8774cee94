// Command ballast-node is Ballast's per-node agent (a DaemonSet): it samples the enrolled
// pods of its node from cgroup files and the kubelet Summary API, aggregates the samples
// into histogram windows and writes them to Valkey, reports OOM kills at once, and never
// writes to the API server. See docs/node-agent.md.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ballastk8s/ballast/pkg/cli"
	"github.com/ballastk8s/ballast/pkg/nodeagent/agent"
)

func main() {
	o := agent.NewOptions()
	o.AddFlags(flag.CommandLine)
	flag.Parse()
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	o.SetupLogging()
	if limit, err := cli.SetMemoryLimit(0); err != nil {
		ctrl.Log.Error(err, "no Go memory limit set")
	} else if limit > 0 {
		ctrl.Log.Info("Go memory limit set from the container's", "bytes", limit)
	}
	// The agent's sources, in the order the debug view lists them: adding one is its file
	// in pkg/nodeagent/agent and its entry here.
	sources := []agent.SourceBuilder{agent.CgroupSource, agent.KubeletSource, agent.OOMSource, agent.EBPFSource}
	ctx := ctrl.SetupSignalHandler()
	cfg, err := ctrl.GetConfig()
	if err == nil {
		var a *agent.Agent
		if a, err = agent.New(o, cfg, sources...); err == nil {
			err = a.Run(ctx)
		}
	}
	if err != nil {
		ctrl.Log.Error(err, "ballast-node failed")
		os.Exit(1)
	}
}
