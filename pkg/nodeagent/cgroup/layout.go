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

// Root is the kubelet's cgroupRoot (its --cgroup-root) as cgroup-name components: nil for
// the hierarchy root (the default "/"), {"custom"} for "/custom", {"a", "b"} for "/a/b" or,
// in systemd form, "/a.slice/a-b.slice". The kubelet puts its pods below
// <cgroupRoot>/kubepods (cgroupfs naming) or the matching systemd slices.
type Root []string

// maxRootDepth bounds the components of a Root.
const maxRootDepth = 16

// ParseRoot parses a kubelet cgroupRoot. "" and "/" are the hierarchy root. A path whose last
// element ends in ".slice" is read in systemd form (the last slice names the whole chain:
// "a-b.slice" is {"a", "b"}, '_' standing for an escaped '-'); any other path in cgroupfs
// form, one component per element. Components are letters, digits, '-', '_' or '.', never
// "." or ".."; anything else is rejected, so a root can never name a directory outside
// the hierarchy.
func ParseRoot(s string) (Root, error) {
	var parts []string
	for _, p := range strings.Split(s, "/") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	if last := parts[len(parts)-1]; strings.HasSuffix(last, ".slice") && last != ".slice" {
		chain := strings.Split(strings.TrimSuffix(last, ".slice"), "-")
		// Every element must be the prefix slice of the next: /a.slice/a-b.slice.
		for i, p := range parts {
			want := strings.Join(chain[:min(i+1, len(chain))], "-") + ".slice"
			if i >= len(chain) || p != want {
				return nil, fmt.Errorf("%w: cgroup root %q: systemd slice %q is not %q", ErrBadIdentifier, truncate(s), truncate(p), truncate(want))
			}
		}
		parts = make([]string, len(chain))
		for i, c := range chain {
			parts[i] = strings.ReplaceAll(c, "_", "-")
		}
	}
	if len(parts) > maxRootDepth {
		return nil, fmt.Errorf("%w: cgroup root %q: more than %d levels", ErrBadIdentifier, truncate(s), maxRootDepth)
	}
	for _, p := range parts {
		if !safeRootName(p) {
			return nil, fmt.Errorf("%w: cgroup root %q: element %q", ErrBadIdentifier, truncate(s), truncate(p))
		}
	}
	return Root(parts), nil
}

// safeRootName: a safeName that may also hold '.', but is not "." or "..".
func safeRootName(s string) bool {
	if s == "." || s == ".." {
		return false
	}
	return safeName(strings.ReplaceAll(s, ".", "_"))
}

// String is the root in cgroupfs form ("/" for the hierarchy root).
func (r Root) String() string { return "/" + strings.Join(r, "/") }

// dirs returns the directory of each name in chain below the hierarchy root: cgroupfs
// nests the names as they are; systemd nests one slice per level, each named after the
// whole chain so far with '-' inside a name escaped to '_' (a-b.slice/a-b-c.slice), which
// is how the kubelet's CgroupName.ToSystemd names them.
func dirs(d Driver, chain []string) string {
	if d != DriverSystemd {
		return path.Join(chain...)
	}
	var out []string
	prefix := ""
	for _, c := range chain {
		c = strings.ReplaceAll(c, "-", "_")
		if prefix != "" {
			c = prefix + "-" + c
		}
		prefix = c
		out = append(out, c+".slice")
	}
	return path.Join(out...)
}

// KubepodsDir returns the directory holding all pods (the node-allocatable cgroup) below
// the hierarchy root: kubepods or kubepods.slice for the root "/",
// custom/kubepods or custom.slice/custom-kubepods.slice for "/custom".
func KubepodsDir(root Root, d Driver) (string, error) {
	if d != DriverSystemd && d != DriverCgroupfs {
		return "", fmt.Errorf("%w: driver %q (want systemd or cgroupfs)", ErrBadIdentifier, d)
	}
	return dirs(d, append(append([]string(nil), root...), "kubepods")), nil
}

// PodDir returns the pod's cgroup directory relative to a hierarchy root (the unified root
// on v2, a controller's root on v1) for a kubelet whose cgroupRoot is the hierarchy root.
// See PodDirIn.
func PodDir(d Driver, podUID string, qos QOSClass) (string, error) {
	return PodDirIn(nil, d, podUID, qos)
}

// PodDirIn returns the pod's cgroup directory relative to a hierarchy root (the unified
// root on v2, a controller's root on v1), as a kubelet with cgroupRoot root names it.
// With root "/":
//
//	systemd,  Guaranteed: kubepods.slice/kubepods-pod<uid_>.slice
//	systemd,  Burstable:  kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice
//	cgroupfs, Guaranteed: kubepods/pod<uid>
//	cgroupfs, BestEffort: kubepods/besteffort/pod<uid>
//
// With root "/custom" the same below custom/ (cgroupfs) or custom.slice/ with every slice
// name prefixed "custom-" (systemd). systemd names replace the UID's '-' with '_' (a '-'
// separates slice levels).
func PodDirIn(root Root, d Driver, podUID string, qos QOSClass) (string, error) {
	if !safeName(podUID) {
		return "", fmt.Errorf("%w: pod UID %q", ErrBadIdentifier, truncate(podUID))
	}
	for _, c := range root {
		if !safeRootName(c) {
			return "", fmt.Errorf("%w: cgroup root element %q", ErrBadIdentifier, truncate(c))
		}
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
	if d != DriverSystemd && d != DriverCgroupfs {
		return "", fmt.Errorf("%w: driver %q (want systemd or cgroupfs)", ErrBadIdentifier, d)
	}
	chain := append(append([]string(nil), root...), "kubepods")
	if qosName != "" {
		chain = append(chain, qosName)
	}
	return dirs(d, append(chain, "pod"+podUID)), nil
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
	return ContainerDirCandidatesIn(nil, d, podUID, qos, id)
}

// ContainerDirCandidatesIn is ContainerDirCandidates for a kubelet with cgroupRoot root.
func ContainerDirCandidatesIn(root Root, d Driver, podUID string, qos QOSClass, id ContainerID) ([]string, error) {
	pod, err := PodDirIn(root, d, podUID, qos)
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
