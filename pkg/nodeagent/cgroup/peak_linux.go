package cgroup

import (
	"os"

	"golang.org/x/sys/unix"
)

// onCgroup2 reports whether f lives on a cgroup2 file system, the only place a write to
// memory.peak means "reset my watermark" rather than "overwrite this file".
func onCgroup2(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var st unix.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return false
	}
	return st.Type == unix.CGROUP2_SUPER_MAGIC
}
