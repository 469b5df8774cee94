package fallback

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	stats "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// SummaryAPI reads a node's kubelet Summary (/stats/summary) through the API server's node
// proxy (RBAC: get on nodes/proxy).
type SummaryAPI interface {
	Summary(ctx context.Context, node string) ([]byte, error)
}

type proxySummary struct{ c kubernetes.Interface }

// NewSummaryAPI returns the node-proxy Summary reader for cfg's API server.
func NewSummaryAPI(cfg *rest.Config) (SummaryAPI, error) {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the node proxy client: %w", err)
	}
	return proxySummary{c: c}, nil
}

func (p proxySummary) Summary(ctx context.Context, node string) ([]byte, error) {
	return p.c.CoreV1().RESTClient().Get().Resource("nodes").Name(node).SubResource("proxy").Suffix("stats", "summary").DoRaw(ctx)
}

// summaryPoints decodes a Summary into one ephemeral-storage point per enrolled pod of
// pods (by UID): per long-running container rootfs.usedBytes + logs.usedBytes (SPEC §4.1),
// and the pod's disk-backed emptyDir volumes summed. A container without both values is
// skipped, never guessed; a pod without any value yields no point. The point's time is
// the newest stats time among its values.
func summaryPoints(b []byte, pods map[string]enrolledPod) (map[string]point, error) {
	var s stats.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decoding the kubelet Summary: %w", err)
	}
	out := map[string]point{}
	for _, ps := range s.Pods {
		ep, ok := pods[ps.PodRef.UID]
		if !ok {
			continue
		}
		p := point{Ephemeral: true, Containers: map[string]usage{}}
		longRunning := longRunning(ep.pod)
		for _, c := range ps.Containers {
			if !longRunning[c.Name] || c.Rootfs == nil || c.Rootfs.UsedBytes == nil || c.Logs == nil || c.Logs.UsedBytes == nil {
				continue
			}
			sum := *c.Rootfs.UsedBytes + *c.Logs.UsedBytes
			if sum < *c.Rootfs.UsedBytes || sum > math.MaxInt64 {
				continue // overflow
			}
			p.Containers[c.Name] = usage{DiskBytes: int64(sum)}
			p.At = later(p.At, c.Rootfs.Time.Time, c.Logs.Time.Time)
		}
		disk := diskEmptyDirs(ep.pod)
		var total uint64
		for _, v := range ps.VolumeStats {
			if disk[v.Name] && v.UsedBytes != nil && total+*v.UsedBytes >= total {
				total += *v.UsedBytes
				p.HasPodDisk = true
				p.At = later(p.At, v.Time.Time)
			}
		}
		if p.HasPodDisk && total <= math.MaxInt64 {
			p.PodDiskBytes = int64(total)
		} else {
			p.HasPodDisk = false
		}
		if p.At.IsZero() || (len(p.Containers) == 0 && !p.HasPodDisk) {
			continue
		}
		p.At = p.At.UTC()
		out[ps.PodRef.UID] = p
	}
	return out, nil
}

// diskEmptyDirs names the pod's emptyDir volumes that are not memory-backed.
func diskEmptyDirs(p *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory && v.EmptyDir.Medium != corev1.StorageMediumHugePages {
			out[v.Name] = true
		}
	}
	return out
}

func later(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}
