package cgroup

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Version is the cgroup hierarchy version.
type Version int

const (
	// VersionAuto asks Open to detect the version from the root.
	VersionAuto Version = 0
	V1          Version = 1
	V2          Version = 2
)

func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	default:
		return "auto"
	}
}

// Driver is the kubelet's cgroup driver, which decides how pod and container cgroups are named.
type Driver string

const (
	// DriverAuto makes the locator try systemd first, then cgroupfs.
	DriverAuto     Driver = ""
	DriverSystemd  Driver = "systemd"
	DriverCgroupfs Driver = "cgroupfs"
)

// QOSClass is a pod's QoS class, spelled as in core/v1 PodStatus.QOSClass.
type QOSClass string

const (
	Guaranteed QOSClass = "Guaranteed"
	Burstable  QOSClass = "Burstable"
	BestEffort QOSClass = "BestEffort"
)

// ErrBadIdentifier is wrapped by the layout functions when a pod UID, container ID or QoS
// class is not something the kubelet would produce; such input never becomes a path.
var ErrBadIdentifier = errors.New("invalid cgroup identifier")

// ContainerID is a container ID from pod status split into runtime and ID
// ("containerd://<id>" ⇒ {containerd, <id>}).
type ContainerID struct {
	Runtime string
	ID      string
}

// ParseContainerID splits "<runtime>://<id>". A bare ID is accepted with an empty runtime.
// The ID must be letters, digits, '-' or '_' (runtimes use 64 hex digits), so it can never
// name another directory.
func ParseContainerID(s string) (ContainerID, error) {
	runtime, id, found := strings.Cut(s, "://")
	if !found {
		runtime, id = "", s
	}
	if !safeName(id) {
		return ContainerID{}, fmt.Errorf("%w: container ID %q", ErrBadIdentifier, truncate(s))
	}
	if runtime != "" && !safeName(runtime) {
		return ContainerID{}, fmt.Errorf("%w: runtime of container ID %q", ErrBadIdentifier, truncate(s))
	}
	return ContainerID{Runtime: runtime, ID: id}, nil
}

// safeName: non-empty, at most 128 bytes of [A-Za-z0-9_-].
func safeName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// PodDir returns the pod's cgroup directory relative to a hierarchy root (the unified root
// on v2, a controller's root on v1), as the kubelet names it:
//
//	systemd,  Guaranteed: kubepods.slice/kubepods-pod<uid_>.slice
//	systemd,  Burstable:  kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice
//	cgroupfs, Guaranteed: kubepods/pod<uid>
//	cgroupfs, BestEffort: kubepods/besteffort/pod<uid>
//
// systemd names replace the UID's '-' with '_' (a '-' separates slice levels).
func PodDir(d Driver, podUID string, qos QOSClass) (string, error) {
	if !safeName(podUID) {
		return "", fmt.Errorf("%w: pod UID %q", ErrBadIdentifier, truncate(podUID))
	}
	var qosName string
	switch qos {
	case Guaranteed:
	case Burstable:
		qosName = "burstable"
	case BestEffort:
		qosName = "besteffort"
	default:
		return "", fmt.Errorf("%w: QoS class %q", ErrBadIdentifier, truncate(string(qos)))
	}
	switch d {
	case DriverSystemd:
		uid := strings.ReplaceAll(podUID, "-", "_")
		if qosName == "" {
			return path.Join("kubepods.slice", "kubepods-pod"+uid+".slice"), nil
		}
		parent := "kubepods-" + qosName
		return path.Join("kubepods.slice", parent+".slice", parent+"-pod"+uid+".slice"), nil
	case DriverCgroupfs:
		return path.Join("kubepods", qosName, "pod"+podUID), nil
	default:
		return "", fmt.Errorf("%w: driver %q (want systemd or cgroupfs)", ErrBadIdentifier, d)
	}
}

// systemdScopePrefix maps a CRI runtime to the prefix of its systemd scope unit.
var systemdScopePrefix = map[string]string{
	"containerd": "cri-containerd",
	"cri-o":      "crio",
	"docker":     "docker",
}

// ContainerDirCandidates returns the possible directories of a container's cgroup relative
// to a hierarchy root, most likely first. With the systemd driver the container is a scope
// "<prefix>-<id>.scope" whose prefix depends on the runtime (cri-containerd, crio, docker;
// all are tried for an unknown runtime); with cgroupfs it is "<id>" (CRI-O: "crio-<id>").
func ContainerDirCandidates(d Driver, podUID string, qos QOSClass, id ContainerID) ([]string, error) {
	pod, err := PodDir(d, podUID, qos)
	if err != nil {
		return nil, err
	}
	if !safeName(id.ID) || (id.Runtime != "" && !safeName(id.Runtime)) {
		return nil, fmt.Errorf("%w: container ID %q://%q", ErrBadIdentifier, truncate(id.Runtime), truncate(id.ID))
	}
	var names []string
	switch d {
	case DriverSystemd:
		if p, ok := systemdScopePrefix[id.Runtime]; ok {
			names = []string{p + "-" + id.ID + ".scope"}
		} else {
			for _, p := range []string{"cri-containerd", "crio", "docker"} {
				names = append(names, p+"-"+id.ID+".scope")
			}
		}
	case DriverCgroupfs:
		switch id.Runtime {
		case "cri-o":
			names = []string{"crio-" + id.ID, id.ID}
		case "containerd", "docker":
			names = []string{id.ID}
		default:
			names = []string{id.ID, "crio-" + id.ID}
		}
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = path.Join(pod, n)
	}
	return out, nil
}
