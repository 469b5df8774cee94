package kubeletstats

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the current output")

// mediaPods are the pods of testdata/media-pods.json, the spec side of
// testdata/media-summary.json (pkg/control/fallback reads the same two files).
func mediaPods(t testing.TB) []corev1.Pod {
	t.Helper()
	b, err := os.ReadFile("testdata/media-pods.json")
	if err != nil {
		t.Fatal(err)
	}
	var list corev1.PodList
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestDiskEmptyDirs: only the default medium is disk. Memory (tmpfs) and every hugepage
// medium, with or without a page size, are not ephemeral storage (the kubelet's
// IsLocalEphemeralVolume); neither are other volume types.
func TestDiskEmptyDirs(t *testing.T) {
	cases := map[string]struct {
		volumes []corev1.Volume
		want    []string
	}{
		"default medium, with or without a size limit": {volumes: []corev1.Volume{emptyDir("a", ""), emptyDir("b", "")},
			want: []string{"a", "b"}},
		"memory":                {volumes: []corev1.Volume{emptyDir("shm", corev1.StorageMediumMemory)}},
		"hugepages":             {volumes: []corev1.Volume{emptyDir("hp", corev1.StorageMediumHugePages)}},
		"hugepages with a size": {volumes: []corev1.Volume{emptyDir("hp", corev1.StorageMediumHugePagesPrefix+"2Mi"), emptyDir("hp1g", corev1.StorageMediumHugePagesPrefix+"1Gi")}},
		"not an emptyDir": {volumes: []corev1.Volume{{Name: "cm", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{}}}}},
		"spec order kept": {volumes: []corev1.Volume{emptyDir("z", ""), emptyDir("shm", corev1.StorageMediumMemory), emptyDir("a", "")},
			want: []string{"z", "a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, DiskEmptyDirs(&corev1.PodSpec{Volumes: tc.volumes})); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

func emptyDir(name string, medium corev1.StorageMedium) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}
}

// TestMediaSummaryGolden decodes testdata/media-summary.json for the pods of
// testdata/media-pods.json, as both binaries do (DiskEmptyDirs of the spec, Extract), and
// compares the readings with testdata/media.golden.json (go test -run Golden -update
// rewrites it). The two decisions it pins, where the agent's and the fallback's copies used
// to differ:
//   - "media": the pod-level series is the default-medium emptyDir "scratch" alone; the
//     Memory, HugePages and HugePages-2Mi volumes the kubelet also lists are not summed
//     (the fallback skipped only "HugePages", the agent every non-Memory medium);
//   - "partial": "tmp" has no usedBytes yet, so there is no pod-level reading at all and
//     one skip says why (the fallback used to write "cache" alone, a partial sum that
//     under-reports).
func TestMediaSummaryGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/media-summary.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSummary(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Pod{}
	for _, p := range mediaPods(t) {
		kp := Pod{EmptyDirVolumes: DiskEmptyDirs(&p.Spec)}
		for _, c := range p.Spec.Containers {
			kp.Containers = append(kp.Containers, c.Name)
		}
		want[string(p.UID)] = kp
	}
	got, err := json.MarshalIndent(struct {
		Pods     map[string]Pod
		Readings Readings
	}{want, Extract(s, want)}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const golden = "testdata/media.golden.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantJSON, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wantJSON, got) {
		t.Errorf("readings differ from %s (-want +got):\n%s", golden, cmp.Diff(string(wantJSON), string(got)))
	}
}
