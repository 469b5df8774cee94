//go:build !linux

package cgroup

import "os"

// openDir opens dir below root for reading the files in it.
func openDir(root *os.Root, dir string) (dirReader, error) { return openRootDir(root, dir) }
