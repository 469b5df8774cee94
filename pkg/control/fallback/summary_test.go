package fallback

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// TestSummaryPointsShareTheAgentsDecisions: the fixture pkg/kubeletstats pins in
// media.golden.json, read by the fallback. The fallback writes what the agent writes: the
// pod-level series of "media" is the default-medium emptyDir alone (no Memory, HugePages or
// HugePages-2Mi volume in it), and "partial", one of whose emptyDirs has no usedBytes yet,
// has no pod-level value at all rather than a partial sum; the containers' rootfs + logs
// are unchanged.
func TestSummaryPointsShareTheAgentsDecisions(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "kubeletstats", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var list corev1.PodList
	if err := json.Unmarshal(read("media-pods.json"), &list); err != nil {
		t.Fatal(err)
	}
	pods := map[string]enrolledPod{}
	for i := range list.Items {
		pods[string(list.Items[i].UID)] = enrolledPod{pod: &list.Items[i]}
	}
	pts, err := summaryPoints(read("media-summary.json"), pods)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Containers map[string]usage
		HasPodDisk bool
		PodDisk    int64
		At         string
	}
	want := map[string]got{
		"7f1e2d3c-4b5a-4968-8776-655443322110": {Containers: map[string]usage{"app": {DiskBytes: 40960 + 8192}},
			HasPodDisk: true, PodDisk: 1 << 20, At: "2026-03-01T11:59:56Z"},
		"1a2b3c4d-5e6f-4a7b-8c9d-aabbccddeeff": {Containers: map[string]usage{"app": {DiskBytes: 4096}},
			At: "2026-03-01T11:59:55Z"},
	}
	out := map[string]got{}
	for uid, p := range pts {
		out[uid] = got{Containers: p.Containers, HasPodDisk: p.HasPodDisk, PodDisk: p.PodDiskBytes, At: p.At.Format(time.RFC3339)}
	}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("points (-want +got)\n%s", d)
	}
}
