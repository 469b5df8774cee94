// Package events publishes Ballast's Kubernetes Events: core v1 Events with source
// component "ballast" (SPEC §11.3). Each controller builds its events with the typed
// constructors of its own events.go; this package only carries them to the API server.
package events

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Event is one event to publish about Object.
type Event struct {
	Object  runtime.Object
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string // PascalCase, a constant of the emitting controller's events.go
	Message string
}

// Recorder publishes events; the zero value and nil discard them (tests, dry runs).
type Recorder struct {
	r record.EventRecorder
}

// New returns a Recorder over r (the manager's GetEventRecorderFor(ballastv1.EventComponent)).
func New(r record.EventRecorder) *Recorder { return &Recorder{r: r} }

// Publish sends each event.
func (r *Recorder) Publish(evts ...Event) {
	if r == nil || r.r == nil {
		return
	}
	for _, e := range evts {
		r.r.Event(e.Object, e.Type, e.Reason, e.Message)
	}
}
