//go:build !linux

package oom

import (
	"context"
	"errors"
)

// Watcher is only implemented on Linux (inotify on cgroup v2 files).
type Watcher struct{}

// NewWatcher fails off Linux.
func NewWatcher(Files, Options) (*Watcher, error) {
	return nil, errors.ErrUnsupported
}

func (w *Watcher) Events() <-chan Event          { return nil }
func (w *Watcher) Add(key, dir string) error     { return errors.ErrUnsupported }
func (w *Watcher) Remove(key string)             {}
func (w *Watcher) Run(ctx context.Context) error { return errors.ErrUnsupported }
func (w *Watcher) Close() error                  { return nil }
