package kubeletstats

import corev1 "k8s.io/api/core/v1"

// DiskEmptyDirs names the pod's disk-backed emptyDir volumes in spec order: those whose
// medium is the default (""), exactly the emptyDirs the kubelet counts as local ephemeral
// storage (k8s.io/kubernetes pkg/volume/util.IsLocalEphemeralVolume). Memory-backed
// (tmpfs) and hugepage-backed ("HugePages", "HugePages-<size>") emptyDirs use no disk and
// are never part of the pod-level ephemeral-storage series. Pod.EmptyDirVolumes is this
// list.
func DiskEmptyDirs(spec *corev1.PodSpec) []string {
	var out []string
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumDefault {
			out = append(out, v.Name)
		}
	}
	return out
}
