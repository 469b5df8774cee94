package fallback

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ballastk8s/ballast/pkg/kubeletstats"
	"github.com/ballastk8s/ballast/pkg/sizing"
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
// pods (by UID), through the decoder the node agent uses (pkg/kubeletstats), so both read
// the same values from the same document: per long-running container rootfs.usedBytes +
// logs.usedBytes (SPEC §4.1), and the sum of the pod's disk-backed emptyDir volumes
// (kubeletstats.DiskEmptyDirs) only when every one of them has a value. A reading the
// decoder skips is skipped here, never guessed; a pod without any value yields no point.
// The point's time is the newest stats time among its values.
func summaryPoints(b []byte, pods map[string]enrolledPod) (map[string]point, error) {
	s, err := kubeletstats.DecodeSummary(b)
	if err != nil {
		return nil, fmt.Errorf("decoding the kubelet Summary: %w", err)
	}
	want := make(map[string]kubeletstats.Pod, len(pods))
	for uid, ep := range pods {
		kp := kubeletstats.Pod{EmptyDirVolumes: kubeletstats.DiskEmptyDirs(&ep.pod.Spec)}
		for _, r := range sizing.LongRunning(&ep.pod.Spec) {
			kp.Containers = append(kp.Containers, r.Name)
		}
		if len(kp.Containers) == 0 {
			continue // nothing Ballast records (an empty list would read every container)
		}
		want[uid] = kp
	}
	r := kubeletstats.Extract(s, want)
	out := map[string]point{}
	pointOf := func(uid string) point {
		if p, ok := out[uid]; ok {
			return p
		}
		return point{Ephemeral: true, Containers: map[string]usage{}}
	}
	for _, c := range r.Containers {
		if !c.HasEphemeralStorage || c.EphemeralStorageBytes > math.MaxInt64 {
			continue
		}
		p := pointOf(c.PodUID)
		p.Containers[c.Container] = usage{DiskBytes: int64(c.EphemeralStorageBytes)}
		p.At = later(p.At, c.EphemeralStorageTime)
		out[c.PodUID] = p
	}
	for _, pr := range r.Pods {
		if pr.EmptyDirBytes > math.MaxInt64 {
			continue
		}
		p := pointOf(pr.PodUID)
		p.HasPodDisk, p.PodDiskBytes = true, int64(pr.EmptyDirBytes)
		p.At = later(p.At, pr.Time)
		out[pr.PodUID] = p
	}
	for uid, p := range out {
		if p.At.IsZero() {
			delete(out, uid)
			continue
		}
		p.At = p.At.UTC()
		out[uid] = p
	}
	return out, nil
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
