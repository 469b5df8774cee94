package chart

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// agent.ebpf.enabled adds exactly CAP_BPF + CAP_PERFMON, the --ebpf flag and read-only
// /sys/kernel/btf (+ tracefs unless turned off); nothing privileged. Off (the default) the
// agent is the hardened non-root container checkAgent checks.
func TestRenderAgentEBPF(t *testing.T) {
	h := newHelm(t)
	agentOf := func(m *manifests) (corev1.PodSpec, corev1.Container) {
		ds := &appsv1.DaemonSet{}
		m.decode(t, "DaemonSet", "ballast-node", ds)
		return ds.Spec.Template.Spec, ds.Spec.Template.Spec.Containers[0]
	}
	mounts := func(c corev1.Container) map[string]bool {
		out := map[string]bool{}
		for _, v := range c.VolumeMounts {
			out[v.MountPath] = v.ReadOnly
		}
		return out
	}

	_, off := agentOf(h.mustTemplate(t))
	if slices.Contains(off.Args, "--ebpf") || len(off.SecurityContext.Capabilities.Add) != 0 {
		t.Errorf("eBPF off by default: args %q, added capabilities %v", off.Args, off.SecurityContext.Capabilities.Add)
	}
	if _, ok := mounts(off)["/sys/kernel/btf"]; ok {
		t.Error("/sys/kernel/btf mounted with eBPF off")
	}

	ps, c := agentOf(h.mustTemplate(t, "--set", "agent.ebpf.enabled=true"))
	if !slices.Contains(c.Args, "--ebpf") {
		t.Errorf("args %q lack --ebpf", c.Args)
	}
	sc := c.SecurityContext
	if diff := cmp.Diff(&corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"BPF", "PERFMON"}}, sc.Capabilities); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	if ptr.Deref(sc.Privileged, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
		t.Errorf("security context must stay unprivileged with a read-only root: %+v", sc)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccomp %+v, want RuntimeDefault", sc.SeccompProfile)
	}
	if ptr.Deref(sc.RunAsUser, -1) != 0 || ptr.Deref(sc.RunAsNonRoot, true) {
		t.Errorf("runAsUser %v runAsNonRoot %v: added capabilities reach the effective set only for uid 0",
			ptr.Deref(sc.RunAsUser, -1), sc.RunAsNonRoot)
	}
	if ps.HostPID || ps.HostNetwork {
		t.Error("eBPF needs neither hostPID nor hostNetwork")
	}
	m := mounts(c)
	for _, p := range []string{"/sys/kernel/btf", "/sys/kernel/tracing", "/host/sys/fs/cgroup"} {
		if ro, ok := m[p]; !ok || !ro {
			t.Errorf("%s: mounted %v read-only %v, want a read-only mount", p, ok, ro)
		}
	}
	hostPaths := map[string]bool{}
	for _, v := range ps.Volumes {
		if v.HostPath != nil {
			hostPaths[v.HostPath.Path] = true
		}
	}
	if !hostPaths["/sys/kernel/btf"] || !hostPaths["/sys/kernel/tracing"] {
		t.Errorf("hostPath volumes %v", hostPaths)
	}

	_, c = agentOf(h.mustTemplate(t, "--set", "agent.ebpf.enabled=true", "--set", "agent.ebpf.tracefs=false"))
	if _, ok := mounts(c)["/sys/kernel/tracing"]; ok {
		t.Error("tracefs mounted with agent.ebpf.tracefs=false")
	}
	if _, err := h.template(t, "--set", "agent.ebpf.enable=true"); err == nil {
		t.Error("misspelt agent.ebpf.enable accepted: the schema must reject it")
	}
}
