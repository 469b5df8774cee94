package kubeletstats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// ErrDecode is wrapped when a response body is not a Summary document.
var ErrDecode = errors.New("decoding kubelet summary")

// DecodeSummary decodes a /stats/summary body. It accepts unknown fields (newer kubelets
// add some) but rejects anything that is not exactly one JSON object.
func DecodeSummary(data []byte) (*statsv1alpha1.Summary, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: body is not a JSON object", ErrDecode)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var s statsv1alpha1.Summary
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the summary object", ErrDecode)
	}
	return &s, nil
}

// Pod is what the caller knows about an enrolled pod from its spec.
type Pod struct {
	// Containers lists the long-running containers to read (regular containers and
	// restartable init sidecars). Empty means every container the summary lists.
	Containers []string
	// EmptyDirVolumes names the pod's disk-backed emptyDir volumes (DiskEmptyDirs). Empty
	// means the pod has no pod-level emptyDir series.
	EmptyDirVolumes []string
}

// Signal names a reading in a Skip.
type Signal string

const (
	SignalEphemeralStorage Signal = "ephemeral-storage"
	SignalCPU              Signal = "cpu"
	SignalMemory           Signal = "memory"
	SignalEmptyDir         Signal = "emptydir"
	// SignalPod / SignalContainer: the whole pod or container is absent from the summary.
	SignalPod       Signal = "pod"
	SignalContainer Signal = "container"
)

// ContainerReading holds one container's values from the summary. Each signal has its own
// Has flag and the kubelet's time for it; a signal whose fields are missing is absent here
// and listed in Readings.Skipped.
type ContainerReading struct {
	PodUID, Namespace, PodName, Container string

	// EphemeralStorageBytes = rootfs.usedBytes + logs.usedBytes (SPEC §4.1).
	HasEphemeralStorage   bool
	EphemeralStorageBytes uint64
	EphemeralStorageTime  time.Time

	// MilliCPU is cpu.usageNanoCores in millicores, rounded up (fallback signal).
	HasMilliCPU bool
	MilliCPU    int64
	CPUTime     time.Time

	// WorkingSetBytes is memory.workingSetBytes (fallback signal).
	HasWorkingSet   bool
	WorkingSetBytes uint64
	MemoryTime      time.Time
}

// PodReading is a pod's pod-level series: the sum of usedBytes of its disk-backed
// emptyDir volumes. Only produced when every such volume has a usedBytes.
type PodReading struct {
	PodUID, Namespace, PodName string
	EmptyDirBytes              uint64
	Time                       time.Time // the newest volume time
}

// Skip is a reading that was not produced, and why.
type Skip struct {
	PodUID    string
	Container string // empty for pod-level skips
	Signal    Signal
	Reason    string
}

// Readings is what Extract found. Readings are never invented: a missing field skips
// that one reading and adds a Skip.
type Readings struct {
	Containers []ContainerReading
	Pods       []PodReading
	Skipped    []Skip
}

// Extract pulls the readings of the given pods (keyed by UID) out of a summary. Pods in
// the summary that are not in pods are ignored; pods in pods that are missing from the
// summary are reported as skipped. Pure.
func Extract(s *statsv1alpha1.Summary, pods map[string]Pod) Readings {
	var out Readings
	seen := make(map[string]bool, len(pods))
	for i := range s.Pods {
		ps := &s.Pods[i]
		uid := ps.PodRef.UID
		want, ok := pods[uid]
		if !ok {
			continue
		}
		if seen[uid] {
			out.skip(uid, "", SignalPod, "pod listed more than once in the summary; first entry used")
			continue
		}
		seen[uid] = true
		out.extractPod(ps, want)
	}
	for _, uid := range sortedKeys(pods) {
		if !seen[uid] {
			out.skip(uid, "", SignalPod, "pod not in the summary")
		}
	}
	return out
}

func (r *Readings) skip(uid, container string, sig Signal, reason string) {
	r.Skipped = append(r.Skipped, Skip{PodUID: uid, Container: container, Signal: sig, Reason: reason})
}

func (r *Readings) extractPod(ps *statsv1alpha1.PodStats, want Pod) {
	uid := ps.PodRef.UID
	byName := make(map[string]*statsv1alpha1.ContainerStats, len(ps.Containers))
	var order []string
	for i := range ps.Containers {
		c := &ps.Containers[i]
		if _, dup := byName[c.Name]; dup {
			r.skip(uid, c.Name, SignalContainer, "container listed more than once in the pod; first entry used")
			continue
		}
		byName[c.Name] = c
		order = append(order, c.Name)
	}
	names := want.Containers
	if len(names) == 0 {
		names = order
	}
	for _, name := range names {
		c, ok := byName[name]
		if !ok {
			r.skip(uid, name, SignalContainer, "container not in the summary")
			continue
		}
		r.Containers = append(r.Containers, r.extractContainer(ps.PodRef, c))
	}
	if len(want.EmptyDirVolumes) > 0 {
		r.extractEmptyDir(ps, want.EmptyDirVolumes)
	}
}

func (r *Readings) extractContainer(ref statsv1alpha1.PodReference, c *statsv1alpha1.ContainerStats) ContainerReading {
	cr := ContainerReading{PodUID: ref.UID, Namespace: ref.Namespace, PodName: ref.Name, Container: c.Name}
	switch {
	case c.Rootfs == nil || c.Rootfs.UsedBytes == nil:
		r.skip(ref.UID, c.Name, SignalEphemeralStorage, "rootfs.usedBytes missing")
	case c.Logs == nil || c.Logs.UsedBytes == nil:
		r.skip(ref.UID, c.Name, SignalEphemeralStorage, "logs.usedBytes missing")
	case *c.Rootfs.UsedBytes > ^uint64(0)-*c.Logs.UsedBytes:
		r.skip(ref.UID, c.Name, SignalEphemeralStorage, "rootfs.usedBytes + logs.usedBytes overflows")
	default:
		cr.HasEphemeralStorage = true
		cr.EphemeralStorageBytes = *c.Rootfs.UsedBytes + *c.Logs.UsedBytes
		cr.EphemeralStorageTime = later(c.Rootfs.Time.Time, c.Logs.Time.Time)
	}
	if c.CPU == nil || c.CPU.UsageNanoCores == nil {
		r.skip(ref.UID, c.Name, SignalCPU, "cpu.usageNanoCores missing")
	} else {
		cr.HasMilliCPU, cr.MilliCPU, cr.CPUTime = true, nanoToMilliCores(*c.CPU.UsageNanoCores), c.CPU.Time.Time
	}
	if c.Memory == nil || c.Memory.WorkingSetBytes == nil {
		r.skip(ref.UID, c.Name, SignalMemory, "memory.workingSetBytes missing")
	} else {
		cr.HasWorkingSet, cr.WorkingSetBytes, cr.MemoryTime = true, *c.Memory.WorkingSetBytes, c.Memory.Time.Time
	}
	return cr
}

// extractEmptyDir sums the usedBytes of the named volumes; any one missing skips the sum
// (a partial sum would under-report).
func (r *Readings) extractEmptyDir(ps *statsv1alpha1.PodStats, names []string) {
	uid := ps.PodRef.UID
	vols := make(map[string]*statsv1alpha1.VolumeStats, len(ps.VolumeStats))
	for i := range ps.VolumeStats {
		v := &ps.VolumeStats[i]
		if _, dup := vols[v.Name]; !dup {
			vols[v.Name] = v
		}
	}
	var missing []string
	var sum uint64
	var at time.Time
	for _, name := range dedupe(names) {
		v, ok := vols[name]
		switch {
		case !ok:
			missing = append(missing, name+" (not listed)")
		case v.UsedBytes == nil:
			missing = append(missing, name+" (no usedBytes)")
		case sum > ^uint64(0)-*v.UsedBytes:
			missing = append(missing, name+" (sum overflows)")
		default:
			sum += *v.UsedBytes
			at = later(at, v.Time.Time)
		}
	}
	if len(missing) > 0 {
		r.skip(uid, "", SignalEmptyDir, "emptyDir volumes without usage: "+strings.Join(missing, ", "))
		return
	}
	r.Pods = append(r.Pods, PodReading{PodUID: uid, Namespace: ps.PodRef.Namespace, PodName: ps.PodRef.Name, EmptyDirBytes: sum, Time: at})
}

// nanoToMilliCores rounds up, as Quantity.MilliValue does for the nanocore value
// metrics.k8s.io serves (and as the cgroup source's MilliCPU does).
func nanoToMilliCores(n uint64) int64 {
	m := n / 1e6
	if n%1e6 != 0 {
		m++
	}
	return int64(m) // ≤ 2^64/1e6, fits
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func dedupe(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

func sortedKeys(m map[string]Pod) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
