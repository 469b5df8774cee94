// Package source is the one shape every ballast-node signal source has (node_exporter's
// collectors): a name, a Collect at a given time over the containers to read, typed
// readings, and typed per-container errors. Units owns what every source has in common —
// the duration and error metrics and the health the debug view shows — so no source
// records its own and no caller writes the bookkeeping again.
package source

import (
	"context"
	"errors"
	"time"
)

// Source reads one kind of signal for a set of targets at time now. T is the source's
// description of what to read, R its typed readings. Errors of single targets are returned
// as Errors (the readings still carry what was read); the error result is reserved for a
// run that failed as a whole (the kubelet unreachable, the context cancelled).
type Source[T, R any] interface {
	// Name is the source label of the agent's metrics and of the debug view.
	Name() string
	Collect(ctx context.Context, now time.Time, targets T) (R, []Error, error)
}

// Error is one failed reading of one target, or the failure of a whole run.
type Error struct {
	// Key names the target (ContainerKey; PodKey for pod-level readings); "" for a run.
	Key string
	// Kind classifies the failure; it becomes the kind label of
	// ballast_node_source_errors_total (for example locate, read, counter_reset, peak,
	// skipped_cpu, unauthorized).
	Kind string
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Fail wraps err as a run failure of the given kind.
func Fail(kind string, err error) error { return &Error{Kind: kind, Err: err} }

// KindOf is the kind of a run failure: the Kind of an *Error it wraps, else "run".
func KindOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Kind != "" {
		return e.Kind
	}
	return "run"
}

// ContainerKey names a container across sources: "<pod UID>/<container name>".
func ContainerKey(podUID, container string) string { return podUID + "/" + container }

// PodKey names a pod's own (pod-level) readings: "<pod UID>/".
func PodKey(podUID string) string { return podUID + "/" }
