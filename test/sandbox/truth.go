package sandbox

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AppTruth is what an app's containers really used over a run, straight from the workload
// models (not from any system's measurements), beside what they requested: the yardstick
// the VPA comparison judges both systems by.
type AppTruth struct {
	// CPU (millicores) and memory (bytes) of every container at every tick.
	CPU, Mem []float64
	// Integrals over the run: millicore-seconds and byte-seconds.
	CPUReqSec, CPUUseSec, CPUOverReqSec float64
	MemReqSec, MemUseSec                float64
	OOMs                                int
	OOMAt                               []time.Time // every kill
}

// P95 is the 95th percentile of xs (0 when empty).
func P95(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(0.95*float64(len(s)-1))]
}

// appKey names an app by namespace and its identity label.
func appKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Labels[identityLabels[0]] }

// account adds one tick of a container's true usage and its requests to its app's truth.
// Called with n.mu held.
func (n *Node) account(p *corev1.Pod, sc *simContainer, dt time.Duration, oom bool, now time.Time) {
	if n.truth == nil {
		n.truth = map[string]*AppTruth{}
	}
	t := n.truth[appKey(p)]
	if t == nil {
		t = &AppTruth{}
		n.truth[appKey(p)] = t
	}
	var req corev1.ResourceList
	for _, c := range p.Spec.Containers {
		if c.Name == sc.name {
			req = c.Resources.Requests
		}
	}
	sec := dt.Seconds()
	cpuReq, memReq := float64(req.Cpu().MilliValue()), float64(req.Memory().Value())
	t.CPU, t.Mem = append(t.CPU, sc.last.MilliCPU), append(t.Mem, sc.last.MemoryBytes)
	t.CPUReqSec += cpuReq * sec
	t.CPUUseSec += sc.last.MilliCPU * sec
	t.CPUOverReqSec += max(sc.last.MilliCPU-cpuReq, 0) * sec
	t.MemReqSec += memReq * sec
	t.MemUseSec += sc.last.MemoryBytes * sec
	if oom {
		t.OOMs++
		t.OOMAt = append(t.OOMAt, now)
	}
}

// Truth returns every app's truth so far, merged over the nodes.
func (s *Sandbox) Truth() map[string]*AppTruth {
	out := map[string]*AppTruth{}
	for _, n := range s.Nodes {
		n.mu.Lock()
		for k, t := range n.truth {
			o := out[k]
			if o == nil {
				o = &AppTruth{}
				out[k] = o
			}
			o.CPU, o.Mem = append(o.CPU, t.CPU...), append(o.Mem, t.Mem...)
			o.CPUReqSec += t.CPUReqSec
			o.CPUUseSec += t.CPUUseSec
			o.CPUOverReqSec += t.CPUOverReqSec
			o.MemReqSec += t.MemReqSec
			o.MemUseSec += t.MemUseSec
			o.OOMs += t.OOMs
			o.OOMAt = append(o.OOMAt, t.OOMAt...)
		}
		n.mu.Unlock()
	}
	for _, t := range out {
		slices.SortFunc(t.OOMAt, func(a, b time.Time) int { return a.Compare(b) })
	}
	return out
}

// reportOOM plays the kubelet's part of an OOM kill in the pod's status (SIMULATED, as kwok
// has none): the container restarts, its restart count grows and its last termination is
// OOMKilled, exit code 137. VPA's recommender learns of OOMs only this way; Ballast's agent
// reads the cgroup's memory.events. False when the update must be retried (conflict).
func (n *Node) reportOOM(ctx context.Context, key client.ObjectKey, container string, at time.Time) bool {
	p := &corev1.Pod{}
	if err := n.c.Get(ctx, key, p); err != nil {
		return true // gone: nothing to report
	}
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		if cs.Name != container {
			continue
		}
		started := metav1.NewTime(at)
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: "OOMKilled", StartedAt: started, FinishedAt: metav1.NewTime(at), ContainerID: cs.ContainerID}}
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}
		cs.RestartCount++
	}
	return n.c.Status().Update(ctx, p) == nil
}
