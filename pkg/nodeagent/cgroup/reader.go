package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrNotFound is wrapped when no candidate directory of a pod or container exists: the
// container is gone, not started yet, or the layout options are wrong.
var ErrNotFound = errors.New("cgroup directory not found")

// Options override what Open would otherwise detect.
type Options struct {
	// Version forces the hierarchy version; VersionAuto detects it.
	Version Version
	// Driver forces the cgroup driver; DriverAuto tries systemd, then cgroupfs.
	Driver Driver
	// Root is the kubelet's cgroupRoot: pods are looked for below it (nil: the hierarchy
	// root, the kubelet's default).
	Root Root
}

// Reader reads cgroup files below one root directory (production: /sys/fs/cgroup; tests:
// a fixture tree). Every name is resolved through os.Root, so nothing outside the root can
// be reached, whatever a pod UID or container ID says; the directories a Collector keeps
// open are opened through it too, and only files directly inside them are read. A Reader
// is safe for concurrent use.
type Reader struct {
	root    *os.Root
	dir     string
	version Version
	driver  Driver
	// kroot is the kubelet's cgroupRoot inside the hierarchy.
	kroot Root
	// cpuCtl and memCtl are the v1 controller directories below the root ("" on v2).
	cpuCtl, memCtl string
}

// Location is where one pod's or container's cgroup files are, relative to the Reader's
// root. On v2 CPUDir and MemoryDir are the same directory; on v1 they are the cpuacct and
// memory controllers' directories of the same cgroup.
type Location struct {
	Version   Version
	Driver    Driver
	CPUDir    string
	MemoryDir string
}

// Open opens the hierarchy at dir. Detection, when not forced: v2 if dir has
// cgroup.controllers or a kubepods tree; v1 if dir has a memory controller directory.
func Open(dir string, opts Options) (*Reader, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening cgroup root %s: %w", dir, err)
	}
	r := &Reader{root: root, dir: dir, version: opts.Version, driver: opts.Driver, kroot: opts.Root}
	if r.version == VersionAuto {
		r.version = detectVersion(root)
		if r.version == VersionAuto {
			root.Close()
			return nil, fmt.Errorf("opening cgroup root %s: no cgroup.controllers, kubepods tree or memory controller found", dir)
		}
	}
	if r.version == V1 {
		r.memCtl = "memory"
		r.cpuCtl = firstDir(root, "cpuacct", "cpu,cpuacct", "cpuacct,cpu")
		if r.cpuCtl == "" {
			root.Close()
			return nil, fmt.Errorf("opening cgroup v1 root %s: no cpuacct controller directory", dir)
		}
	}
	return r, nil
}

func detectVersion(root *os.Root) Version {
	if _, err := root.Stat("cgroup.controllers"); err == nil {
		return V2
	}
	if firstDir(root, "memory") != "" {
		return V1
	}
	if firstDir(root, "kubepods.slice", "kubepods") != "" {
		return V2
	}
	return VersionAuto
}

// firstDir returns the first name that is a directory below root, or "".
func firstDir(root *os.Root, names ...string) string {
	for _, n := range names {
		if fi, err := root.Stat(n); err == nil && fi.IsDir() {
			return n
		}
	}
	return ""
}

// Close releases the root directory.
func (r *Reader) Close() error { return r.root.Close() }

// KubeletRoot is the kubelet cgroupRoot pods are looked for below.
func (r *Reader) KubeletRoot() Root { return r.kroot }

// CheckRoot verifies that the kubelet's pod cgroup (kubepods below the kubelet cgroupRoot,
// for the forced driver or either) exists, so a wrong root is reported once, clearly,
// rather than as every pod's ErrNotFound. The error wraps ErrNotFound and names every
// directory tried.
func (r *Reader) CheckRoot() error {
	var tried []string
	for _, d := range r.drivers() {
		dir, err := KubepodsDir(r.kroot, d)
		if err != nil {
			return err
		}
		if r.version == V1 {
			dir = path.Join(r.memCtl, dir)
		}
		if isDir(r.root, dir) {
			return nil
		}
		tried = append(tried, dir)
	}
	return fmt.Errorf("kubelet cgroup root %s: none of %s exists under %s (is the kubelet's cgroupRoot %s?): %w",
		r.kroot, strings.Join(tried, ", "), r.dir, r.kroot, ErrNotFound)
}

// Version is the hierarchy version in use.
func (r *Reader) Version() Version { return r.version }

// Abs turns a Location directory into a path on the host (for inotify watches).
func (r *Reader) Abs(rel string) string { return filepath.Join(r.dir, filepath.FromSlash(rel)) }

func (r *Reader) drivers() []Driver {
	if r.driver != DriverAuto {
		return []Driver{r.driver}
	}
	return []Driver{DriverSystemd, DriverCgroupfs}
}

// locate turns candidate relative directories into the first Location that exists.
func (r *Reader) locate(d Driver, candidates []string) (Location, bool) {
	for _, c := range candidates {
		loc := Location{Version: r.version, Driver: d, CPUDir: c, MemoryDir: c}
		if r.version == V1 {
			loc.CPUDir, loc.MemoryDir = path.Join(r.cpuCtl, c), path.Join(r.memCtl, c)
		}
		if isDir(r.root, loc.MemoryDir) && isDir(r.root, loc.CPUDir) {
			return loc, true
		}
	}
	return Location{}, false
}

func isDir(root *os.Root, name string) bool {
	fi, err := root.Stat(name)
	return err == nil && fi.IsDir()
}

// LocatePod finds the pod-level cgroup of a pod.
func (r *Reader) LocatePod(podUID string, qos QOSClass) (Location, error) {
	for _, d := range r.drivers() {
		dir, err := PodDirIn(r.kroot, d, podUID, qos)
		if err != nil {
			return Location{}, fmt.Errorf("locating pod %s cgroup: %w", podUID, err)
		}
		if loc, ok := r.locate(d, []string{dir}); ok {
			return loc, nil
		}
	}
	return Location{}, fmt.Errorf("locating pod %s (%s) cgroup under %s: %w", podUID, qos, r.dir, ErrNotFound)
}

// LocateContainer finds a container's cgroup from its pod's UID and QoS class and its
// container ID as pod status reports it ("containerd://<id>").
func (r *Reader) LocateContainer(podUID string, qos QOSClass, containerID string) (Location, error) {
	id, err := ParseContainerID(containerID)
	if err != nil {
		return Location{}, fmt.Errorf("locating container cgroup of pod %s: %w", podUID, err)
	}
	for _, d := range r.drivers() {
		candidates, err := ContainerDirCandidatesIn(r.kroot, d, podUID, qos, id)
		if err != nil {
			return Location{}, fmt.Errorf("locating container %s of pod %s: %w", truncate(id.ID), podUID, err)
		}
		if loc, ok := r.locate(d, candidates); ok {
			return loc, nil
		}
	}
	return Location{}, fmt.Errorf("locating container %s of pod %s (%s) under %s: %w", truncate(id.ID), podUID, qos, r.dir, ErrNotFound)
}

// Cgroup returns the Location of an arbitrary cgroup given by its path inside the
// hierarchy ("" or "/" for the root cgroup, "/kubepods" …, as /proc/<pid>/cgroup names
// it). The path must stay inside the root and the directory must exist.
func (r *Reader) Cgroup(cgroupPath string) (Location, error) {
	rel := strings.TrimPrefix(path.Clean("/"+cgroupPath), "/")
	if rel == "" {
		rel = "."
	}
	if loc, ok := r.locate(r.driver, []string{rel}); ok {
		return loc, nil
	}
	return Location{}, fmt.Errorf("locating cgroup %q under %s: %w", cgroupPath, r.dir, ErrNotFound)
}

// fileSource reads the files of a Location's directories: a Reader resolves every path
// through its root; the Collector reads through the directories it keeps open (openDirs).
type fileSource interface {
	// read returns the content of dir/name, dir being the Location's CPUDir or MemoryDir.
	// The bytes may be reused by the next read.
	read(dir, name string) ([]byte, error)
}

// read reads dir/name below the root, wrapping errors with the file's path.
func (r *Reader) read(dir, name string) ([]byte, error) {
	p := path.Join(dir, name)
	b, err := r.root.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return b, nil
}

// readParsed reads and parses one file, wrapping parse errors with the file's path.
func readParsed[T any](src fileSource, dir, name string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	b, err := src.read(dir, name)
	if err != nil {
		return zero, err
	}
	v, err := parse(b)
	if err != nil {
		return zero, fmt.Errorf("reading %s: %w", path.Join(dir, name), err)
	}
	return v, nil
}

// isAbsent reports an error that means "this optional file is not there" (PSI disabled,
// old kernel): ENOENT, or EOPNOTSUPP which the kernel returns for pressure files when PSI
// is compiled in but disabled.
func isAbsent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errors.ErrUnsupported)
}
