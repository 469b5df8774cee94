package cgroup

import (
	"io/fs"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// fdDir reads files with openat(2) relative to the directory's descriptor: one system call
// to open, no *os.File, no allocation but the name's.
type fdDir struct {
	f  *os.File // the directory, opened through the Reader's root; owns fd
	fd int
}

// openDir opens dir below root for reading the files in it.
func openDir(root *os.Root, dir string) (dirReader, error) {
	f, err := root.Open(dir)
	if err != nil {
		return nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	d := &fdDir{f: f}
	if err := rc.Control(func(fd uintptr) { d.fd = int(fd) }); err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

// readFile opens name inside the directory: a single path component (checkName) that is
// not followed if it is a symbolic link (O_NOFOLLOW), so the read cannot leave it.
func (d *fdDir) readFile(name string, buf *[]byte) ([]byte, error) {
	defer runtime.KeepAlive(d.f)
	if d.fd < 0 {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: os.ErrClosed}
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	defer unix.Close(fd)
	b, err := readAll(func(p []byte) (n int, err error) {
		err = retryEINTR(func() (err error) {
			n, err = unix.Read(fd, p)
			return err
		})
		return max(n, 0), err
	}, buf)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return b, nil
}

// Close closes the directory; reads fail with os.ErrClosed afterwards (the descriptor's
// number may already name another file).
func (d *fdDir) Close() error {
	d.fd = -1
	return d.f.Close()
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
