package cgroup

import (
	"errors"
	"fmt"
	"syscall"
)

// ID is the cgroup id of dir (relative to the Reader's root): the inode number of the
// cgroup directory, which is what the kernel reports as a cgroup id (and what the eBPF
// programs put in their records). On v1 pass the controller's directory (MemoryDir for
// the memory cgroup).
func (r *Reader) ID(dir string) (uint64, error) {
	fi, err := r.root.Stat(dir)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("cgroup id: no inode number on this platform")
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("cgroup id: %s is not a directory", dir)
	}
	return st.Ino, nil
}
