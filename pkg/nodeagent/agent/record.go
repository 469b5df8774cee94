package agent

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/ballastk8s/ballast/pkg/nodeagent/buffer"
	"github.com/ballastk8s/ballast/pkg/nodeagent/discovery"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
)

// The shared record path every source writes through: the pod set a discovery snapshot
// makes, one sample into the buffer, and the per-target errors of the debug view.

// applySnapshot makes a discovery snapshot the agent's pod set (none while the informers
// sync or BallastConfig is missing) and its store layout, and returns the pods to sample.
func (a *Agent) applySnapshot(snap discovery.Snapshot, now time.Time) []discovery.Pod {
	pods := snap.Pods
	paused := ""
	switch {
	case !snap.Synced:
		paused, pods = "waiting for the informers to sync", nil
	case !snap.ConfigFound:
		paused, pods = "BallastConfig ballast not found: nothing is measured (SPEC §2.1)", nil
	}
	a.retention.Store(int64(snap.Retention))
	a.buf.SetWindow(a.layout().Window)
	a.setPods(pods, snap.Capacity, paused, now)
	return pods
}

// setPods makes pods the state's pod set and stops watching containers that are gone.
func (a *Agent) setPods(pods []discovery.Pod, capacity discovery.Capacity, paused string, now time.Time) {
	a.st.mu.Lock()
	a.st.paused = paused
	a.st.capacity = capacity
	gone := a.st.setPodsLocked(pods, now)
	newlyIgnored := a.st.ignoredRefsLocked(pods)
	bound, unbound := 0, 0
	for _, p := range pods {
		if p.Hash != "" {
			bound++
		} else {
			unbound++
		}
	}
	a.st.mu.Unlock()
	for _, p := range newlyIgnored {
		a.m.refsIgnored.Inc()
		a.log.Info("ignoring a profile-ref the pod's labels do not resolve to; its samples are held until it is stamped with its own profile",
			"pod", klog.KRef(p.Namespace, p.Name), "profileRef", p.ProfileRef)
	}
	a.m.pods.WithLabelValues("bound").Set(float64(bound))
	a.m.pods.WithLabelValues("unbound").Set(float64(unbound))
	a.oomw.forget(gone)
}

// recordLocked adds one sample to the buffer under the pod's hash (pending under the pod
// while it is unbound) and updates the counters and the debug view. cs is nil for the
// pod-level series.
func (a *Agent) recordLocked(p discovery.Pod, cs *ctrState, resource, signal string, v float64, at time.Time, source string, exact *bool) {
	sr := buffer.Series{Resource: resource, Signal: signal}
	if cs != nil {
		sr.Container = cs.name
	}
	if reason, msg := implausible(a.st.capacity, resource, v); reason != "" {
		a.m.rejected.WithLabelValues(resource, signal, source, reason).Inc()
		if cs != nil {
			cs.errorLocked(source, fmt.Sprintf("%s/%s sample %.0f rejected: %s", resource, signal, v, msg), at)
		}
		return
	}
	if err := a.buf.Add(p.Hash, p.UID, sr, v, at); err != nil {
		a.m.rejected.WithLabelValues(resource, signal, source, rejectInvalid).Inc()
		if cs != nil {
			cs.errorLocked(source, fmt.Sprintf("%s/%s sample %v rejected: %v", resource, signal, v, err), at)
		}
		return
	}
	a.st.tallyLocked(owner(p), sr, 1, at)
	a.sampleCounter(resource, signal, source).Inc()
	if cs != nil {
		cs.last[sr] = lastSample{v: v, at: at, source: source, exact: exact}
	}
}

// errorsByKey joins each target's error messages into one line for the debug view.
func errorsByKey(errs []source.Error) map[string]string {
	out := make(map[string]string, len(errs))
	for _, e := range errs {
		msg := strings.ReplaceAll(e.Err.Error(), "\n", "; ")
		if prev := out[e.Key]; prev != "" {
			msg = prev + "; " + msg
		}
		out[e.Key] = msg
	}
	return out
}
