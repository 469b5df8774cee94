package agent

import (
	"context"
	"time"

	"github.com/ballastk8s/ballast/pkg/kubeletstats"
	"github.com/ballastk8s/ballast/pkg/nodeagent/kubelet"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
	"github.com/ballastk8s/ballast/pkg/series"
)

// summarySource is the kubelet Summary reader (a *kubelet.Client; tests plug in others).
type summarySource = source.Source[map[string]kubeletstats.Pod, kubeletstats.Readings]

// kubeletSource is the kubelet Summary source: ephemeral storage per container (rootfs +
// logs), the pod-level emptyDir series, and cpu/memory of containers whose cgroup files
// cannot be read. Without --kubelet-url it is listed as disabled and reads nothing.
type kubeletSource struct {
	a    *Agent
	kube summarySource // nil when disabled
}

// KubeletSource builds the kubelet Summary source (--kubelet-url, disabled without one).
func KubeletSource(a *Agent) (Source, error) {
	s := &kubeletSource{a: a}
	o := a.o
	if o.KubeletURL != "" {
		kc, err := kubelet.NewClient(kubelet.Config{URL: o.KubeletURL, TokenFile: o.KubeletTokenFile, CAFile: o.KubeletCAFile,
			InsecureSkipVerify: o.KubeletInsecureSkipVerify})
		if err != nil {
			return nil, err
		}
		s.kube = kc
	}
	return s, nil
}

func (s *kubeletSource) Name() string { return sourceKubelet }

func (s *kubeletSource) Detail() string {
	if s.kube == nil {
		return "disabled (no --kubelet-url): no ephemeral-storage samples, no cpu/memory fallback"
	}
	return s.a.o.KubeletURL + " at the pods' sampling intervals, at most every " + s.a.o.KubeletMinInterval.String()
}

func (s *kubeletSource) Signals() []string {
	if s.kube == nil {
		return nil
	}
	return []string{series.ResourceEphemeralStorage}
}

func (s *kubeletSource) Close() error { return nil }

// Run is the kubelet source's loop. The Summary is read at the pods' cadence (SPEC §4.1:
// each pod's sampling interval), never more often than --kubelet-min-interval, the
// kubelet's own refresh period (10–15 s).
func (s *kubeletSource) Run(ctx context.Context) error {
	if s.kube == nil {
		return nil
	}
	var last time.Time
	return s.a.loop(ctx, nil, func(ctx context.Context, now time.Time) time.Time { return s.turn(ctx, now, &last) })
}

// turn reads the Summary when a new read period has begun since *last (the time of the
// previous read), and returns when the next one begins. Reads fall on period boundaries,
// so every interval window of every pod (each at least one period long) holds one.
func (s *kubeletSource) turn(ctx context.Context, now time.Time, last *time.Time) time.Time {
	want, period := s.targets()
	if period == 0 {
		return now.Add(maxWait)
	}
	if last.IsZero() || !now.Truncate(period).Equal(last.Truncate(period)) {
		s.once(ctx, now, want)
		*last = now
	}
	return now.Truncate(period).Add(period)
}

// summaryPeriod is how often the Summary is read for pods sampled at these intervals: the
// smallest of them, floored at the kubelet's refresh period; 0 without pods.
func summaryPeriod(intervals []time.Duration, floor time.Duration) time.Duration {
	var p time.Duration
	for _, iv := range intervals {
		iv = max(iv, floor)
		if p == 0 || iv < p {
			p = iv
		}
	}
	return p
}

// due reports whether a kubelet reading whose stats were taken at statsAt is recorded, the
// last recorded one having been taken at last. The stats' own timestamps decide, not the
// time of the read: a reading the kubelet has not refreshed since is never recorded twice,
// and for a pod whose interval is above the floor only the first reading of each interval
// window (aligned on those timestamps) is, so a container contributes one sample per
// interval. At or below the floor every refresh counts once.
func due(statsAt, last time.Time, interval, floor time.Duration) bool {
	switch {
	case statsAt.IsZero() || !statsAt.After(last):
		return false
	case last.IsZero() || interval <= floor:
		return true
	}
	return !statsAt.Truncate(interval).Equal(last.Truncate(interval))
}

// sampleTime is the kubelet's time of a reading when it is plausible, else now.
func sampleTime(kubeletAt, now time.Time) time.Time {
	if kubeletAt.IsZero() || kubeletAt.After(now) || now.Sub(kubeletAt) > 5*time.Minute {
		return now
	}
	return kubeletAt
}

// targets lists what to read for every pod with a running container, and the read period
// those pods need.
func (s *kubeletSource) targets() (map[string]kubeletstats.Pod, time.Duration) {
	a := s.a
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	want := make(map[string]kubeletstats.Pod, len(a.st.pods))
	intervals := make([]time.Duration, 0, len(a.st.pods))
	for uid, ps := range a.st.pods {
		kp := kubeletstats.Pod{EmptyDirVolumes: ps.pod.EmptyDirVolumes}
		for _, c := range ps.pod.Containers {
			if c.ID != "" {
				kp.Containers = append(kp.Containers, c.Name)
			}
		}
		if len(kp.Containers) > 0 {
			want[uid] = kp
			intervals = append(intervals, ps.pod.Interval)
		}
	}
	return want, summaryPeriod(intervals, a.o.KubeletMinInterval)
}

// once reads the Summary once and records what is due.
func (s *kubeletSource) once(ctx context.Context, now time.Time, want map[string]kubeletstats.Pod) {
	a := s.a
	cctx, cancel := context.WithTimeout(ctx, max(a.o.KubeletMinInterval, 10*time.Second))
	col, errs, err := source.Collect(cctx, a.units, s.kube, now, want)
	cancel()
	if err != nil {
		return
	}
	floor := a.o.KubeletMinInterval
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	for _, cr := range col.Containers {
		ps := a.st.pods[cr.PodUID]
		cs := a.st.ctrs[containerKey(cr.PodUID, cr.Container)]
		if ps == nil || cs == nil {
			continue
		}
		iv := ps.pod.Interval
		if cr.HasEphemeralStorage && due(cr.EphemeralStorageTime, cs.kubeletAt["eph"], iv, floor) {
			a.recordLocked(ps.pod, cs, series.ResourceEphemeralStorage, series.SignalUsage, float64(cr.EphemeralStorageBytes),
				sampleTime(cr.EphemeralStorageTime, now), sourceKubelet, nil)
			cs.kubeletAt["eph"] = cr.EphemeralStorageTime
		}
		// cpu and memory come from the kubelet only while the cgroup files fail.
		if cs.cgroupTried && !cs.cpuOK && cr.HasMilliCPU && due(cr.CPUTime, cs.kubeletAt["cpu"], iv, floor) {
			a.recordLocked(ps.pod, cs, series.ResourceCPU, series.SignalUsage, float64(cr.MilliCPU),
				sampleTime(cr.CPUTime, now), sourceKubelet, nil)
			cs.kubeletAt["cpu"] = cr.CPUTime
		}
		if cs.cgroupTried && !cs.memOK && cr.HasWorkingSet && due(cr.MemoryTime, cs.kubeletAt["mem"], iv, floor) {
			a.recordLocked(ps.pod, cs, series.ResourceMemory, series.SignalUsage, float64(cr.WorkingSetBytes),
				sampleTime(cr.MemoryTime, now), sourceKubelet, nil)
			cs.kubeletAt["mem"] = cr.MemoryTime
			cs.maxSeen = max(cs.maxSeen, cr.WorkingSetBytes)
		}
	}
	for _, pr := range col.Pods {
		ps := a.st.pods[pr.PodUID]
		if ps == nil || !due(pr.Time, ps.emptyDirAt, ps.pod.Interval, floor) {
			continue
		}
		a.recordLocked(ps.pod, nil, series.ResourceEphemeralStorage, series.SignalUsage, float64(pr.EmptyDirBytes),
			sampleTime(pr.Time, now), sourceKubelet, nil)
		ps.emptyDirAt = pr.Time
	}
	for key, msg := range errorsByKey(errs) {
		if cs := a.st.ctrs[key]; cs != nil {
			cs.errorLocked(sourceKubelet, msg, now)
		}
	}
}
