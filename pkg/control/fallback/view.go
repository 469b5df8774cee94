package fallback

import (
	"context"
	"time"
)

// ProfileCoverage is what the profiles controller shows about one profile's pods on nodes
// without a live node agent.
type ProfileCoverage struct {
	// UncoveredPods counts the profile's bound pods on nodes without a live agent.
	UncoveredPods int
	// API is metrics.k8s.io's state; Message says why when it is Unavailable.
	API     APIState
	Message string
	// EphemeralStorage says whether their ephemeral storage is measured (kubelet Summary
	// through the node proxy); EphemeralProblem why not, when enabled but failing.
	EphemeralStorage bool
	EphemeralProblem string
}

// View is the fallback's state as the profiles controller reads it.
type View interface {
	Coverage(profile string) ProfileCoverage
	// Interval is how often the fallback reads metrics.k8s.io.
	Interval() time.Duration
}

type viewState struct {
	profiles map[string]ProfileCoverage
	api      APIState
	msg      string
	eph      string // the ephemeral-storage problem, "" when measured
}

// Coverage returns the profile's coverage as of the last cycle.
func (c *Controller) Coverage(profile string) ProfileCoverage {
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.view.profiles[profile]
	pc.EphemeralStorage = c.o.Enabled && c.o.EphemeralStorage && c.view.eph == ""
	if c.o.EphemeralStorage {
		pc.EphemeralProblem = c.view.eph
	}
	return pc
}

// Interval is Options.Interval.
func (c *Controller) Interval() time.Duration { return c.o.Interval }

func (c *Controller) currentAPIState() APIState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.view.api
}

func (c *Controller) setView(uncovered map[string]int, state APIState, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state == APIUnknown && msg != "" {
		state = c.view.api // a transient error keeps the last known state
	}
	if msg == "" && state == c.view.api {
		msg = c.view.msg
	}
	if state == APIServed {
		msg = ""
	}
	c.view.api, c.view.msg = state, msg
	c.view.profiles = make(map[string]ProfileCoverage, len(uncovered))
	for p, n := range uncovered {
		c.view.profiles[p] = ProfileCoverage{UncoveredPods: n, API: state, Message: msg}
	}
}

// apiTransition publishes one event on the BallastConfig, and logs once, when
// metrics.k8s.io stops or starts being served, never per cycle or per pod.
func (c *Controller) apiTransition(ctx context.Context, state APIState, msg string) {
	if state == APIUnknown {
		return
	}
	c.mu.Lock()
	prev := c.view.api
	c.mu.Unlock()
	if prev == state {
		return
	}
	c.m.setAPI(state)
	switch {
	case state == APIUnavailable:
		c.log.Error(nil, "metrics.k8s.io is not served: pods on nodes without a node agent are not measured", "reason", msg)
		c.publish(ctx, apiUnavailableEvent(msg))
	case state == APIServed && prev == APIUnavailable:
		c.log.Info("metrics.k8s.io is served again: pods on nodes without a node agent are measured through it")
		c.publish(ctx, apiAvailableEvent())
	case state == APIServed:
		c.log.Info("measuring pods on nodes without a node agent through metrics.k8s.io")
	}
}
