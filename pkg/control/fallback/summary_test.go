package fallback

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func summaryPod() enrolledPod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "a", UID: "u1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}, Volumes: []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		}}}
	return enrolledPod{pod: p}
}

const summaryJSON = `{"node":{"nodeName":"n","startTime":null},"pods":[
 {"podRef":{"name":"web-1","namespace":"a","uid":"u1"},"startTime":null,
  "containers":[
   {"name":"app","startTime":null,"rootfs":{"time":"2026-12-01T12:00:05Z","usedBytes":1000},"logs":{"time":"2026-12-01T12:00:06Z","usedBytes":24}},
   {"name":"debug","startTime":null,"rootfs":{"time":"2026-12-01T12:00:09Z","usedBytes":5},"logs":{"time":"2026-12-01T12:00:09Z","usedBytes":5}}],
  "volume":[{"name":"scratch","time":"2026-12-01T12:00:04Z","usedBytes":4096},{"name":"shm","time":"2026-12-01T12:00:04Z","usedBytes":777}]},
 {"podRef":{"name":"other","namespace":"a","uid":"u2"},"startTime":null,
  "containers":[{"name":"app","startTime":null,"rootfs":{"time":"2026-12-01T12:00:05Z","usedBytes":1}}]}]}`

// TestSummaryPoints: rootfs + logs per long-running container, disk-backed emptyDirs for
// the pod, the newest stats time; memory-backed volumes, containers Ballast does not
// record and pods it does not know are left out.
func TestSummaryPoints(t *testing.T) {
	pts, err := summaryPoints([]byte(summaryJSON), map[string]enrolledPod{"u1": summaryPod()})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := pts["u1"]
	if !ok || len(pts) != 1 {
		t.Fatalf("points %+v", pts)
	}
	if got := p.Containers["app"].DiskBytes; got != 1024 || len(p.Containers) != 1 {
		t.Errorf("containers %+v, want app = 1024 bytes only", p.Containers)
	}
	if !p.HasPodDisk || p.PodDiskBytes != 4096 {
		t.Errorf("pod emptyDir %v/%d, want 4096 (the memory-backed volume left out)", p.HasPodDisk, p.PodDiskBytes)
	}
	if want := "2026-12-01T12:00:06Z"; p.At.Format("2006-01-02T15:04:05Z") != want || !p.Ephemeral {
		t.Errorf("point at %s (ephemeral %v), want %s", p.At, p.Ephemeral, want)
	}
	ups := windowUpdates("abc", []point{p}, map[string]bool{"app": true}, 300e9)
	if len(ups) != 2 {
		t.Fatalf("%d window updates, want the container and the pod-level series", len(ups))
	}
	for _, u := range ups {
		if u.Series.Resource != "ephemeral-storage" || u.Hist.FallbackN != 1 {
			t.Errorf("update %s: %d fallback samples", u.Series, u.Hist.FallbackN)
		}
	}
	if _, err := summaryPoints([]byte("{"), nil); err == nil {
		t.Error("a truncated Summary was accepted")
	}
}

// FuzzSummaryPoints: arbitrary bytes never panic; every accepted point has a time, and
// only non-negative byte counts.
func FuzzSummaryPoints(f *testing.F) {
	f.Add([]byte(summaryJSON))
	f.Add([]byte(`{"pods":[{"podRef":{"uid":"u1"},"containers":[{"name":"app","rootfs":{"usedBytes":18446744073709551615},"logs":{"usedBytes":1}}]}]}`))
	f.Add([]byte(`null`))
	pods := map[string]enrolledPod{"u1": summaryPod()}
	f.Fuzz(func(t *testing.T, b []byte) {
		pts, err := summaryPoints(b, pods)
		if err != nil {
			return
		}
		for _, p := range pts {
			if p.At.IsZero() || p.PodDiskBytes < 0 {
				t.Fatalf("point %+v", p)
			}
			for _, u := range p.Containers {
				if u.DiskBytes < 0 {
					t.Fatalf("negative bytes %+v", p)
				}
			}
		}
	})
}
