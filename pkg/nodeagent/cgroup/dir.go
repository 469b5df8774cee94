package cgroup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// openDirs are a Location's directories, kept open by the Collector for as long as it
// samples the container. Reading a file then costs an open of its own name relative to
// the directory, not the resolution of a path five or six directories deep through the
// Reader's root, and reuses one buffer (docs/benchmarks.md, "ballast-node").
//
// Whatever cannot be read through an open directory is read again by its path through the
// root, so a read returns exactly what ReadSample would: the same data, or the same error.
type openDirs struct {
	r        *Reader
	loc      Location
	cpu, mem dirReader // the same on v2
	buf      *[]byte   // the Collector's, shared by all its reads
	// stale: a file could not be read through its open directory but could by its path
	// (the cgroup was recreated under the same name). The Collector reopens the directories.
	stale bool
}

// dirReader reads the files of one open directory.
type dirReader interface {
	// readFile reads the whole file name (one path component) into *buf, growing it as
	// needed, and returns the bytes read.
	readFile(name string, buf *[]byte) ([]byte, error)
	Close() error
}

// openDirs opens loc's directories through the root.
func (r *Reader) openDirs(loc Location, buf *[]byte) (*openDirs, error) {
	mem, err := openDir(r.root, loc.MemoryDir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", loc.MemoryDir, err)
	}
	cpu := mem
	if loc.CPUDir != loc.MemoryDir {
		if cpu, err = openDir(r.root, loc.CPUDir); err != nil {
			mem.Close()
			return nil, fmt.Errorf("opening %s: %w", loc.CPUDir, err)
		}
	}
	return &openDirs{r: r, loc: loc, cpu: cpu, mem: mem, buf: buf}, nil
}

func (o *openDirs) read(dir, name string) ([]byte, error) {
	var d dirReader
	switch dir {
	case o.loc.MemoryDir:
		d = o.mem
	case o.loc.CPUDir:
		d = o.cpu
	default:
		return o.r.read(dir, name)
	}
	if b, err := d.readFile(name, o.buf); err == nil {
		return b, nil
	}
	b, err := o.r.read(dir, name)
	if err == nil {
		o.stale = true
	}
	return b, err
}

func (o *openDirs) Close() error {
	err := o.mem.Close()
	if o.cpu != o.mem {
		err = errors.Join(err, o.cpu.Close())
	}
	return err
}

// checkName refuses a name that is not a single path component, so a dirReader can only
// ever open a file directly inside its directory.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%w: %q is not a file name", ErrBadIdentifier, name)
	}
	return nil
}

// readAll reads until read reports the end (0 bytes), into *buf grown as needed.
func readAll(read func([]byte) (int, error), buf *[]byte) ([]byte, error) {
	b := (*buf)[:0]
	if cap(b) == 0 {
		b = make([]byte, 0, 4096) // every cgroup file of a container fits
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := read(b[len(b):cap(b)])
		if n > 0 {
			b = b[:len(b)+n]
		}
		if err != nil || n == 0 {
			*buf = b[:0]
			return b, err
		}
	}
}

// rootDir reads through an os.Root opened on the directory (every platform; openDir on
// Linux reads through the directory's descriptor instead).
type rootDir struct{ root *os.Root }

func openRootDir(root *os.Root, dir string) (dirReader, error) {
	sub, err := root.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return rootDir{sub}, nil
}

func (d rootDir) readFile(name string, buf *[]byte) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f, err := d.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(func(p []byte) (int, error) {
		n, err := f.Read(p)
		if err == io.EOF {
			err = nil
		}
		return n, err
	}, buf)
}

func (d rootDir) Close() error { return d.root.Close() }
