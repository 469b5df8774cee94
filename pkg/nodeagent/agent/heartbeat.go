package agent

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// Version is the agent's version as its heartbeat reports it; set at link time
// (-X github.com/ballastk8s/ballast/pkg/nodeagent/agent.Version=...), else the module's.
var Version = ""

// heartbeatFlushes is how many flush intervals a heartbeat stays live: the control plane
// moves the node's pods to the fallback source once that many flushes were missed.
const heartbeatFlushes = 3

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// heartbeat is the presence record as of now; ok is false before the first sampling turn.
func (a *Agent) heartbeatRecord(now time.Time) (series.Heartbeat, bool) {
	since := a.since.Load()
	if since == 0 {
		return series.Heartbeat{}, false
	}
	hb := series.Heartbeat{Node: a.o.NodeName, Version: version(), Signals: a.signals(),
		Since: time.Unix(0, since).UTC(), At: now.UTC(), TTL: heartbeatFlushes * a.o.FlushInterval}
	if !a.through.IsZero() && !a.through.Before(hb.Since) {
		hb.Through = a.through.UTC()
	}
	return hb, true
}

// writeHeartbeat records the agent's presence beside its flush. A failure is only logged:
// the heartbeat then expires and the control plane measures this node's pods itself.
func (a *Agent) writeHeartbeat(ctx context.Context, w *store.Writer, now time.Time) {
	hb, ok := a.heartbeatRecord(now)
	if !ok {
		return
	}
	hctx, cancel := context.WithTimeout(ctx, a.o.FlushTimeout)
	defer cancel()
	if err := w.Heartbeat(hctx, hb); err != nil {
		a.m.flushes.WithLabelValues("heartbeat_error").Inc()
		a.log.V(1).Info("heartbeat not written", "error", err.Error())
	}
}
