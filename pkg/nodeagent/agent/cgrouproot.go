package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/kubelet"
)

// Where the kubelet cgroupRoot in use came from (the debug view and the start log).
const (
	rootFromFlag    = "flag"
	rootFromKubelet = "kubelet /configz"
	rootDefault     = "default"
)

// configzTimeout bounds the one /configz read at start.
const configzTimeout = 10 * time.Second

// cgroupConfigReader reads the kubelet's cgroup settings (*kubelet.Client; tests: a stub).
type cgroupConfigReader interface {
	CgroupConfig(ctx context.Context) (kubelet.CgroupConfig, error)
}

// kubeletRoot is the resolved kubelet cgroupRoot and how it was found.
type kubeletRoot struct {
	root   cgroup.Root
	from   string // rootFromFlag, rootFromKubelet or rootDefault
	detail string // why the default is used, or the check's failure; "" when all is well
}

// resolveKubeletRoot decides below which cgroup the kubelet's pods are: --kubelet-cgroup-root
// when set; else the kubelet's own cgroupRoot from /configz (kc nil: no --kubelet-url);
// else the hierarchy root, the kubelet's default. A bad flag is an error (Validate catches
// it first); a failed or unparsable /configz is not: the default is used and the reason
// kept for the log and the debug view.
func resolveKubeletRoot(ctx context.Context, flagValue string, kc cgroupConfigReader) (kubeletRoot, error) {
	if flagValue != "" {
		r, err := cgroup.ParseRoot(flagValue)
		if err != nil {
			return kubeletRoot{}, fmt.Errorf("--kubelet-cgroup-root: %w", err)
		}
		return kubeletRoot{root: r, from: rootFromFlag}, nil
	}
	if kc == nil {
		return kubeletRoot{from: rootDefault, detail: "no --kubelet-url to read the kubelet's cgroupRoot from"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, configzTimeout)
	defer cancel()
	cc, err := kc.CgroupConfig(ctx)
	if err != nil {
		return kubeletRoot{from: rootDefault, detail: "reading the kubelet's cgroupRoot: " + err.Error()}, nil
	}
	r, err := cgroup.ParseRoot(cc.CgroupRoot)
	if err != nil {
		return kubeletRoot{from: rootDefault, detail: "the kubelet's cgroupRoot: " + err.Error()}, nil
	}
	return kubeletRoot{root: r, from: rootFromKubelet}, nil
}

// String is the root for the debug view: "/custom (kubelet /configz)", with any detail.
func (k kubeletRoot) String() string {
	s := k.root.String() + " (" + k.from + ")"
	if k.detail != "" {
		s += "; " + k.detail
	}
	return s
}

// checkKubeletRoot logs, once at start, a kubelet cgroupRoot with no kubepods cgroup below
// it (or a /configz that could not be read) and keeps the reason for the cgroup source's
// line in the debug view. The agent runs on: each pod it then cannot find is counted as
// ballast_node_source_errors_total{source="cgroup",kind="locate"}.
func (a *Agent) checkKubeletRoot() {
	if err := a.cg.CheckRoot(); err != nil {
		if a.kroot.detail != "" {
			a.kroot.detail += "; "
		}
		a.kroot.detail += err.Error()
		a.log.Error(err, "no pod cgroups where the kubelet's cgroupRoot says; set --kubelet-cgroup-root (chart: agent.cgroupRoot) to the kubelet's cgroupRoot",
			"kubeletCgroupRoot", a.kroot.String())
		return
	}
	if a.kroot.detail != "" {
		a.log.Info("using the hierarchy root as the kubelet's cgroupRoot", "reason", a.kroot.detail)
	}
}
