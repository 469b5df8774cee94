package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/ballastk8s/ballast/pkg/nodeagent/kubelet"
	"github.com/ballastk8s/ballast/pkg/series"
)

// runSummary reads the kubelet Summary API every KubeletInterval: ephemeral storage per
// container (rootfs + logs), the pod-level emptyDir series, and cpu/memory for containers
// whose cgroup files could not be read.
func (a *Agent) runSummary(ctx context.Context) error {
	t := time.NewTicker(a.o.KubeletInterval)
	defer t.Stop()
	for {
		a.summaryOnce(ctx, a.now())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// due reports whether a kubelet-sourced signal may be recorded again: the kubelet has a
// newer reading than the last one recorded (the same reading twice would be an invented
// sample), and the pod's sampling interval has passed since (with 10% slack for jitter).
func due(kubeletAt, lastKubeletAt, lastRecorded, now time.Time, interval time.Duration) bool {
	if kubeletAt.IsZero() || !kubeletAt.After(lastKubeletAt) {
		return false
	}
	return lastRecorded.IsZero() || now.Sub(lastRecorded) >= interval*9/10
}

// sampleTime is the kubelet's time of a reading when it is plausible, else now.
func sampleTime(kubeletAt, now time.Time) time.Time {
	if kubeletAt.IsZero() || kubeletAt.After(now) || now.Sub(kubeletAt) > 5*time.Minute {
		return now
	}
	return kubeletAt
}

func (a *Agent) summaryOnce(ctx context.Context, now time.Time) {
	a.st.mu.Lock()
	want := make(map[string]kubelet.Pod, len(a.st.pods))
	for uid, ps := range a.st.pods {
		kp := kubelet.Pod{EmptyDirVolumes: ps.pod.EmptyDirVolumes}
		for _, c := range ps.pod.Containers {
			if c.ID != "" {
				kp.Containers = append(kp.Containers, c.Name)
			}
		}
		if len(kp.Containers) > 0 {
			want[uid] = kp
		}
	}
	a.st.mu.Unlock()
	if len(want) == 0 {
		return
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, max(a.o.KubeletInterval, 10*time.Second))
	col, err := a.kube.Collect(cctx, now, want)
	cancel()
	a.m.cycleDuration.WithLabelValues(sourceKubelet).Observe(time.Since(start).Seconds())

	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.st.sourceRunLocked(sourceKubelet, now, time.Since(start), err)
	if err != nil {
		a.m.sourceErrors.WithLabelValues(sourceKubelet, "request").Inc()
		return
	}
	for _, cr := range col.Containers {
		ps := a.st.pods[cr.PodUID]
		cs := a.st.ctrs[containerKey(cr.PodUID, cr.Container)]
		if ps == nil || cs == nil {
			continue
		}
		iv := ps.pod.Interval
		if cr.HasEphemeralStorage && due(cr.EphemeralStorageTime, cs.kubeletAt["eph"], cs.kubeletRecordedAt["eph"], now, iv) {
			a.recordLocked(ps.pod, cs, series.ResourceEphemeralStorage, series.SignalUsage, float64(cr.EphemeralStorageBytes),
				sampleTime(cr.EphemeralStorageTime, now), sourceKubelet, nil)
			cs.kubeletAt["eph"], cs.kubeletRecordedAt["eph"] = cr.EphemeralStorageTime, now
		}
		// cpu and memory come from the kubelet only while the cgroup files fail.
		if cs.cgroupTried && !cs.cpuOK && cr.HasMilliCPU && due(cr.CPUTime, cs.kubeletAt["cpu"], cs.kubeletRecordedAt["cpu"], now, iv) {
			a.recordLocked(ps.pod, cs, series.ResourceCPU, series.SignalUsage, float64(cr.MilliCPU),
				sampleTime(cr.CPUTime, now), sourceKubelet, nil)
			cs.kubeletAt["cpu"], cs.kubeletRecordedAt["cpu"] = cr.CPUTime, now
		}
		if cs.cgroupTried && !cs.memOK && cr.HasWorkingSet && due(cr.MemoryTime, cs.kubeletAt["mem"], cs.kubeletRecordedAt["mem"], now, iv) {
			a.recordLocked(ps.pod, cs, series.ResourceMemory, series.SignalUsage, float64(cr.WorkingSetBytes),
				sampleTime(cr.MemoryTime, now), sourceKubelet, nil)
			cs.kubeletAt["mem"], cs.kubeletRecordedAt["mem"] = cr.MemoryTime, now
			cs.maxSeen = max(cs.maxSeen, cr.WorkingSetBytes)
		}
	}
	for _, pr := range col.Pods {
		ps := a.st.pods[pr.PodUID]
		if ps == nil || !due(pr.Time, ps.emptyDirAt, ps.emptyDirRecordedAt, now, ps.pod.Interval) {
			continue
		}
		a.recordLocked(ps.pod, nil, series.ResourceEphemeralStorage, series.SignalUsage, float64(pr.EmptyDirBytes),
			sampleTime(pr.Time, now), sourceKubelet, nil)
		ps.emptyDirAt, ps.emptyDirRecordedAt = pr.Time, now
	}
	for _, sk := range col.Skipped {
		a.m.sourceErrors.WithLabelValues(sourceKubelet, "skipped_"+string(sk.Signal)).Inc()
		if cs := a.st.ctrs[containerKey(sk.PodUID, sk.Container)]; cs != nil && sk.Container != "" {
			cs.errorLocked(sourceKubelet, fmt.Sprintf("%s reading skipped: %s", sk.Signal, sk.Reason), now)
		}
	}
}
